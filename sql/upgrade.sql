--
-- Upgrade from 1.0 (Snowflake only) to 1.1 (tickets).  Leaves the
-- extension at 1.1 for the tests that follow.
--
DROP EXTENSION IF EXISTS snowid;
CREATE EXTENSION snowid VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
SELECT count(*) AS ticket_functions FROM pg_proc WHERE proname LIKE 'snowid_ticket%';
ALTER EXTENSION snowid UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
SELECT proname FROM pg_proc WHERE proname LIKE 'snowid_ticket%' ORDER BY 1;
SELECT to_regclass('snowid_tickets') IS NOT NULL AS view_exists;
-- The upgraded extension works.
SELECT snowid_ticket_create('upgrade_t');
SELECT snowid_ticket_next('upgrade_t');
DROP SEQUENCE upgrade_t;
SELECT count(*) AS rows_left FROM snowid_ticket;
-- A fresh 1.1 install has the same objects.
DROP EXTENSION snowid;
CREATE EXTENSION snowid;
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
SELECT count(*) AS ticket_functions FROM pg_proc WHERE proname LIKE 'snowid_ticket%';
