--
-- A ticket sequence cannot be rewound or replaced: setval back, ALTER
-- SEQUENCE, hand-made or stale rows, DROP in any mode, DROP EXTENSION.
--
\set VERBOSITY default
CREATE ROLE regress_rewinder;
GRANT USAGE ON SCHEMA public TO regress_rewinder;
SELECT snowid_ticket_create('rw', 0, 1, 5);
CREATE TABLE rw_taken (v bigint PRIMARY KEY);
GRANT INSERT ON rw_taken TO regress_rewinder;
-- USAGE is enough to take values.
GRANT USAGE ON SEQUENCE rw TO regress_rewinder;
SET ROLE regress_rewinder;
SELECT array_agg(snowid_ticket_next('rw')) FROM generate_series(1, 12);
RESET ROLE;
INSERT INTO rw_taken SELECT generate_series(1, 12);

-- A role with UPDATE on the sequence moves it back: the next block is
-- refused (and keeps being refused), never served twice.
GRANT UPDATE ON SEQUENCE rw TO regress_rewinder;
SET ROLE regress_rewinder;
SELECT setval('rw', 0, false);
INSERT INTO rw_taken SELECT snowid_ticket_next('rw') FROM generate_series(1, 10);
INSERT INTO rw_taken SELECT snowid_ticket_next('rw') FROM generate_series(1, 10);
RESET ROLE;
SELECT served FROM snowid_ticket WHERE seqrelid = 'rw'::regclass;
-- The users cannot read or move the served mark.
SET ROLE regress_rewinder;
SELECT served FROM snowid_ticket;
UPDATE snowid_ticket SET served = -1;
SELECT seqrelid, block FROM snowid_ticket;
RESET ROLE;
-- The hint's setval repairs it; values continue above every value served.
SELECT setval('rw', 2);
INSERT INTO rw_taken SELECT snowid_ticket_next('rw') FROM generate_series(1, 10);
SELECT count(*), max(v) FROM rw_taken;

-- ALTER SEQUENCE that changes how the sequence counts is refused, even by
-- the owner; what restores a ticket's settings, and OWNED BY, pass.
ALTER SEQUENCE rw RESTART;
ALTER SEQUENCE rw RESTART WITH 100;
ALTER SEQUENCE rw START 0;
ALTER SEQUENCE rw INCREMENT -1;
ALTER SEQUENCE rw INCREMENT 2;
ALTER SEQUENCE rw MINVALUE -10;
ALTER SEQUENCE rw NO MINVALUE;
ALTER SEQUENCE rw MAXVALUE 10;
ALTER SEQUENCE rw NO MAXVALUE;
ALTER SEQUENCE rw CYCLE;
ALTER SEQUENCE rw CACHE 10;
ALTER SEQUENCE rw AS integer;
ALTER SEQUENCE rw SET UNLOGGED;
ALTER TABLE rw SET UNLOGGED;
ALTER SEQUENCE rw INCREMENT 1 NO CYCLE CACHE 1 MINVALUE 0 AS bigint;
ALTER SEQUENCE rw OWNED BY rw_taken.v;
ALTER SEQUENCE rw OWNED BY NONE;
ALTER SEQUENCE rw SET LOGGED;
SELECT seqincrement, seqcycle, seqcache, seqmin, seqstart
  FROM pg_sequence WHERE seqrelid = 'rw'::regclass;
-- Still counting where it was.
SELECT snowid_ticket_next('rw') > (SELECT max(v) FROM rw_taken) AS continues;

-- Altered before these checks existed (written into pg_sequence here): the
-- next block is refused with what is wrong and how to fix it.
SELECT snowid_ticket_create('rw_alt', 0, 1, 1);
SELECT snowid_ticket_next('rw_alt');
UPDATE pg_sequence SET seqincrement = 2 WHERE seqrelid = 'rw_alt'::regclass;
SELECT snowid_ticket_next('rw_alt');
UPDATE pg_sequence SET seqincrement = 1, seqcycle = true WHERE seqrelid = 'rw_alt'::regclass;
SELECT snowid_ticket_next('rw_alt');
UPDATE pg_sequence SET seqcycle = false, seqmax = 10 WHERE seqrelid = 'rw_alt'::regclass;
SELECT snowid_ticket_next('rw_alt');
UPDATE pg_sequence SET seqmax = 9223372036854775807 WHERE seqrelid = 'rw_alt'::regclass;
SELECT snowid_ticket_next('rw_alt');
DROP SEQUENCE rw_alt;

-- An unlogged or cycling sequence registered by hand is refused at use.
CREATE UNLOGGED SEQUENCE rw_unlogged MINVALUE 0 START 0;
INSERT INTO snowid_ticket (seqrelid, shard, shards, block, start, type, stamp)
VALUES ('rw_unlogged', 0, 1, 1, 1, 'bigint', 1);
SELECT snowid_ticket_next('rw_unlogged');
DROP SEQUENCE rw_unlogged;

-- A row for a sequence that never was a ticket (as a row left behind by a
-- DROP whose OID was then reused): not a ticket, no value comes out.
CREATE SEQUENCE rw_plain MINVALUE 0 START 0 MAXVALUE 9223372036854775807;
ALTER TABLE snowid_ticket DISABLE TRIGGER snowid_ticket_registered;
INSERT INTO snowid_ticket (seqrelid, shard, shards, block, start, type, stamp)
VALUES ('rw_plain', 0, 1, 1, 1, 'bigint', 1);
ALTER TABLE snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_registered;
SELECT snowid_ticket_next('rw_plain');
-- Dropping it removes the row all the same.
DROP SEQUENCE rw_plain;
SELECT count(*) AS rows_of_rw_plain FROM snowid_ticket
 WHERE seqrelid::oid NOT IN (SELECT oid FROM pg_class);

-- DROP removes the row also where event triggers do not fire.
SELECT snowid_ticket_create('rw_replica');
SET session_replication_role = replica;
DROP SEQUENCE rw_replica;
RESET session_replication_role;
SELECT count(*) AS stale_rows FROM snowid_ticket
 WHERE seqrelid::oid NOT IN (SELECT oid FROM pg_class);

-- The row of a ticket never gets a new version (the served mark is written
-- into it in place): an UPDATE that changes a column is refused, by the
-- owner too; the one that changes nothing (it registers tickets again after
-- pg_upgrade) leaves the row alone, so a rollback keeps the mark.
SELECT snowid_ticket_create('rw_mark', 0, 1, 5);
SELECT snowid_ticket_next('rw_mark') FROM generate_series(1, 3);
UPDATE snowid_ticket SET served = 0 WHERE seqrelid = 'rw_mark'::regclass;
UPDATE snowid_ticket SET block = 6 WHERE seqrelid = 'rw_mark'::regclass;
BEGIN;
UPDATE snowid_ticket SET seqrelid = seqrelid
 WHERE seqrelid = 'rw_mark'::regclass;
SELECT count(snowid_ticket_next('rw_mark')) FROM generate_series(1, 50);
ROLLBACK;
SELECT t.served >= s.last_value AS mark_kept
  FROM snowid_ticket t, rw_mark s WHERE t.seqrelid = 'rw_mark'::regclass;
-- A new version made anyway (trigger disabled by a superuser): this
-- transaction cannot put the mark into it, and reserves nothing (the block
-- its sequence returned for the refused reservation is skipped).
BEGIN;
ALTER TABLE snowid_ticket DISABLE TRIGGER snowid_ticket_fixed;
UPDATE snowid_ticket SET seqrelid = seqrelid
 WHERE seqrelid = 'rw_mark'::regclass;
SELECT count(snowid_ticket_next('rw_mark')) FROM generate_series(1, 50);
ROLLBACK;
-- Values continue above the 53 taken so far.
SELECT min(v) > 53 AS continues_above
  FROM (SELECT snowid_ticket_next('rw_mark') AS v
		  FROM generate_series(1, 20)) AS taken;
-- Deleting a live ticket's row is refused; DROP SEQUENCE removes it.
DELETE FROM snowid_ticket WHERE seqrelid = 'rw_mark'::regclass;

-- The owner of the database reads the whole table, served mark included
-- (its pg_dump copies it); other users still cannot.
CREATE ROLE regress_dbowner;
SELECT datdba::regrole AS old_dbowner FROM pg_database
 WHERE datname = current_database() \gset
DO $$
BEGIN
	EXECUTE format('ALTER DATABASE %I OWNER TO regress_dbowner',
				   current_database());
END
$$;
SET ROLE regress_dbowner;
SELECT served >= 0 AS served_read FROM snowid_ticket
 WHERE seqrelid = 'rw_mark'::regclass;
RESET ROLE;
ALTER DATABASE :"DBNAME" OWNER TO :"old_dbowner";
SET ROLE regress_rewinder;
SELECT served FROM snowid_ticket;
RESET ROLE;
DROP ROLE regress_dbowner;
DROP SEQUENCE rw_mark;

-- ALTER TABLE ... SET UNLOGGED of a table that owns a ticket sequence
-- would make the sequence unlogged too (from PostgreSQL 15): refused.
SELECT snowid_ticket_create('rw_owned', 0, 1, 5);
CREATE TABLE rw_owner (id bigint);
ALTER SEQUENCE rw_owned OWNED BY rw_owner.id;
ALTER TABLE rw_owner SET UNLOGGED;
SELECT relpersistence FROM pg_class WHERE oid = 'rw_owned'::regclass;
ALTER TABLE rw_owner SET LOGGED;
-- Detached, the table may become unlogged.
ALTER SEQUENCE rw_owned OWNED BY NONE;
ALTER TABLE rw_owner SET UNLOGGED;
SELECT relpersistence FROM pg_class WHERE oid = 'rw_owned'::regclass;
DROP TABLE rw_owner;
DROP SEQUENCE rw_owned;

-- Bad type: a clear error, not a cache lookup failure.
SELECT snowid_ticket_create('rw_type', type => 0);

-- Out of values before this server started (here: moved to the end by
-- setval): the documented error, not nextval's.
SELECT snowid_ticket_create('rw_full', 0, 1, 1000, 2147483000, 'integer');
SELECT setval('rw_full', (SELECT max_value FROM pg_sequences WHERE sequencename = 'rw_full'));
SELECT snowid_ticket_next('rw_full');
SELECT snowid_ticket_next('rw_full');
DROP SEQUENCE rw_full;

-- DROP EXTENSION refuses while ticket sequences exist, and CASCADE drops
-- them together with the defaults that take their values.
CREATE TABLE rw_orders (id bigint DEFAULT snowid_ticket_next('rw'::regclass), note text);
DROP EXTENSION snowid;
DROP EXTENSION snowid CASCADE;
SELECT count(*) AS ticket_sequences_left FROM pg_class WHERE relname = 'rw';
\d rw_orders
CREATE EXTENSION snowid;
SELECT count(*) AS rows_left FROM snowid_ticket;

DROP TABLE rw_orders, rw_taken;
REVOKE USAGE ON SCHEMA public FROM regress_rewinder;
DROP ROLE regress_rewinder;

-- A data-only restore with --disable-triggers ends with ALTER TABLE ...
-- ENABLE TRIGGER ALL, which would make the ALWAYS guard triggers of
-- snowid_ticket fire only outside replica mode: snowid sets them back to
-- ALWAYS, so under session_replication_role = replica the served mark still
-- cannot be lowered, and a rewound ticket issues nothing twice.
SELECT snowid_ticket_create('rw_trg', block => 3) IS NOT NULL AS created;
SELECT max(snowid_ticket_next('rw_trg')) FROM generate_series(1, 10);
ALTER TABLE snowid_ticket DISABLE TRIGGER ALL;
ALTER TABLE snowid_ticket ENABLE TRIGGER ALL;
SELECT tgname, tgenabled FROM pg_trigger
 WHERE tgrelid = 'snowid_ticket'::regclass ORDER BY tgname;
ALTER TABLE snowid_ticket ENABLE REPLICA TRIGGER snowid_ticket_fixed;
SELECT tgname, tgenabled FROM pg_trigger
 WHERE tgrelid = 'snowid_ticket'::regclass ORDER BY tgname;
SET session_replication_role = replica;
UPDATE snowid_ticket SET served = -1 WHERE seqrelid = 'rw_trg'::regclass;
RESET session_replication_role;
SELECT setval('rw_trg', 0, false);
DISCARD ALL;
\set VERBOSITY terse
SELECT count(*) AS reissued FROM (
  SELECT snowid_ticket_next('rw_trg') AS v FROM generate_series(1, 10)) s
WHERE v <= 10;
\set VERBOSITY default
DROP SEQUENCE rw_trg;
