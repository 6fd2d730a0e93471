--
-- The configuration parameters: visible, documented, and guarded.
--
SELECT name, context, vartype, unit,
       CASE name WHEN 'snowid.library_version' THEN '(the build''s)' ELSE boot_val END AS boot_val,
       min_val, max_val, short_desc <> '' AS described
FROM pg_settings WHERE name LIKE 'snowid.%' ORDER BY name;
-- The library's version is the control file's default version it was
-- built with.
SELECT current_setting('snowid.library_version') =
       (SELECT default_version FROM pg_available_extensions WHERE name = 'snowid')
  AS library_is_the_default_version;
SELECT short_desc, extra_desc FROM pg_settings WHERE name = 'snowid.id_bits';

-- No session can change the layout or the node ID of a running server.
SET snowid.node_id = 5;
SET snowid.node_bits = 8;
SET snowid.epoch = '2026-01-01';
RESET snowid.node_id;
-- The clock policy is set in postgresql.conf and reloaded, not per session.
SET snowid.max_lead = 0;
SET snowid.max_wait = '10s';
-- The prefix is reserved.
SET snowid.nodeid = 5;

-- ALTER SYSTEM refuses what the server would refuse at start.
ALTER SYSTEM SET snowid.node_id = 'abc';
ALTER SYSTEM SET snowid.node_id = -2;
ALTER SYSTEM SET snowid.node_bits = 40;
ALTER SYSTEM SET snowid.sequence_bits = -1;
-- (the range in these messages has units from PostgreSQL 16 on)
\set VERBOSITY sqlstate
ALTER SYSTEM SET snowid.tick = 0;
\set VERBOSITY default
ALTER SYSTEM SET snowid.tick = '2 days';
ALTER SYSTEM SET snowid.epoch = '2999-01-01 00:00:00+00';
ALTER SYSTEM SET snowid.epoch = 'yesterday-ish';
ALTER SYSTEM SET snowid.epoch = 'now';
ALTER SYSTEM SET snowid.epoch = 'today';
ALTER SYSTEM SET snowid.epoch = 'epoch';
ALTER SYSTEM SET snowid.epoch = 'infinity';
\set VERBOSITY sqlstate
ALTER SYSTEM SET snowid.max_lead = '-1ms';
ALTER SYSTEM SET snowid.max_wait = '2h';
\set VERBOSITY default

-- ALTER SYSTEM also refuses a value with which the layout of the next start
-- would be refused, before it writes anything: with the default layout, a
-- node ID beyond 10 node bits, or widths that leave a layout already dead.
SET timezone = 'UTC';
ALTER SYSTEM SET snowid.node_id = 1024;
ALTER SYSTEM SET snowid.id_bits = 32;
ALTER SYSTEM SET snowid.sequence_bits = 31;
RESET timezone;
