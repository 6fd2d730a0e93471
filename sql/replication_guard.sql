--
-- The replication guard (1.9, 1.11) on every table of snowid:
--  * each has snowid_local_only (BEFORE ROW, enabled REPLICA) and
--    snowid_local_only_truncate (BEFORE TRUNCATE, enabled ALWAYS): the
--    tables of the extension, so a table added later without them shows
--    here;
--  * ALTER TABLE ... ENABLE TRIGGER ALL | USER | name after DISABLE
--    TRIGGER ALL (a data-only restore with pg_dump --disable-triggers)
--    leaves every guard trigger in the mode the install script gave it;
--  * a TRUNCATE in a session that replays for a replication origin (as
--    pglogical's workers do) is refused on every table, whatever the
--    session_replication_role; the server's own TRUNCATE passes.
-- (The apply worker of a subscription: TAP 100, part 5.)
--

CREATE TEMP VIEW snowid_guards AS
SELECT c.relname,
	   string_agg(t.tgname || ' ' || t.tgenabled::text, ', ' ORDER BY t.tgname)
		 AS triggers
  FROM pg_depend d
  JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'snowid'
  JOIN pg_class c ON c.oid = d.objid AND c.relkind = 'r'
  LEFT JOIN pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
 WHERE d.classid = 'pg_class'::regclass
   AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
 GROUP BY c.relname;

-- As installed: A = ALWAYS, R = REPLICA.
SELECT relname, triggers FROM snowid_guards ORDER BY relname;
CREATE TEMP TABLE installed AS SELECT * FROM snowid_guards;

-- The tables of snowid, each named once, for \gexec.
CREATE TEMP VIEW snowid_tables AS
SELECT format('%I.%I', n.nspname, c.relname) AS t
  FROM pg_depend d
  JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'snowid'
  JOIN pg_class c ON c.oid = d.objid AND c.relkind = 'r'
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE d.classid = 'pg_class'::regclass
   AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e';

-- What pg_dump --disable-triggers wraps a data-only restore of each in.
SELECT format('ALTER TABLE %s DISABLE TRIGGER ALL', t) FROM snowid_tables ORDER BY t \gexec
SELECT relname, triggers FROM snowid_guards
 WHERE triggers ~ ' [AOR](,|$)' ORDER BY relname;
SELECT format('ALTER TABLE %s ENABLE TRIGGER ALL', t) FROM snowid_tables ORDER BY t \gexec
SELECT relname, triggers FROM snowid_guards EXCEPT SELECT * FROM installed;

-- The same with ENABLE TRIGGER USER, and by name.
SELECT format('ALTER TABLE %s DISABLE TRIGGER USER', t) FROM snowid_tables ORDER BY t \gexec
SELECT format('ALTER TABLE %s ENABLE TRIGGER USER', t) FROM snowid_tables ORDER BY t \gexec
SELECT relname, triggers FROM snowid_guards EXCEPT SELECT * FROM installed;
SELECT format('ALTER TABLE %s ENABLE TRIGGER snowid_local_only', t),
	   format('ALTER TABLE %s ENABLE TRIGGER snowid_local_only_truncate', t)
  FROM snowid_tables ORDER BY t \gexec
SELECT relname, triggers FROM snowid_guards EXCEPT SELECT * FROM installed;

-- A guard trigger disabled by name stays disabled when another trigger of
-- its table is enabled (D = disabled); enabling it restores its mode.
ALTER TABLE snowid_pool DISABLE TRIGGER snowid_local_only;
ALTER TABLE snowid_pool ENABLE TRIGGER snowid_local_only_truncate;
SELECT relname, triggers FROM snowid_guards WHERE relname = 'snowid_pool';
ALTER TABLE snowid_pool ENABLE TRIGGER snowid_local_only;
SELECT relname, triggers FROM snowid_guards EXCEPT SELECT * FROM installed;

-- TRUNCATE of each table (CASCADE: snowid_pool_range refers to
-- snowid_pool) in a session replaying for an origin, in both roles: each
-- is refused, the table it names first.
CREATE FUNCTION pg_temp.truncate_each() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	tab text;
BEGIN
	FOR tab IN SELECT t FROM snowid_tables ORDER BY t LOOP
		BEGIN
			EXECUTE format('TRUNCATE %s CASCADE', tab);
			RETURN NEXT tab || ': truncated';
			RAISE EXCEPTION USING ERRCODE = 'P0004';	-- undo it
		EXCEPTION
			WHEN assert_failure THEN NULL;
			WHEN OTHERS THEN
				RETURN NEXT tab || ': ' || SQLSTATE || ' ' || SQLERRM;
		END;
	END LOOP;
END
$$;
SELECT pg_replication_origin_create('snowid_regress_origin') > 0 AS created;
SELECT pg_replication_origin_session_setup('snowid_regress_origin');
SET client_min_messages = warning;
SELECT * FROM pg_temp.truncate_each();
SET session_replication_role = replica;
SELECT * FROM pg_temp.truncate_each();
RESET session_replication_role;
RESET client_min_messages;
\set VERBOSITY default
BEGIN;
TRUNCATE snowid_registry_node;
ROLLBACK;
SELECT pg_replication_origin_session_reset();
SELECT pg_replication_origin_drop('snowid_regress_origin');

-- This server's own TRUNCATE passes (rolled back here), also under
-- session_replication_role = replica (a data load, not replication).
SET client_min_messages = warning;
SELECT * FROM pg_temp.truncate_each();
SET session_replication_role = replica;
SELECT * FROM pg_temp.truncate_each();
RESET session_replication_role;
RESET client_min_messages;

-- The update from 1.10 sets snowid_local_only back to REPLICA where an
-- ENABLE TRIGGER ALL under 1.10 left it ORIGIN (made here in the catalog:
-- this library's hook would repair an ALTER TABLE at once).
DROP EXTENSION snowid;
CREATE EXTENSION snowid VERSION '1.10';
UPDATE pg_trigger SET tgenabled = 'O'
 WHERE tgname = 'snowid_local_only'
   AND tgrelid IN ('snowid_pool'::regclass, 'snowid_registry_node'::regclass);
ALTER EXTENSION snowid UPDATE TO '1.11';
SELECT relname, triggers FROM snowid_guards EXCEPT SELECT * FROM installed;

