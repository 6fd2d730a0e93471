--
-- Findings of the adversarial review of 1.2 (each block states what must
-- hold; they fail on the code reviewed).
--
\set VERBOSITY terse

-- 1. The served mark must survive a rollback of a transaction that updated
-- the ticket's row (README: "UPDATE snowid_ticket SET seqrelid = seqrelid"
-- re-registers tickets) and then reserved blocks: the in-place update went
-- into the transaction's own new row version, which the rollback discards,
-- so after a restart setval back reissued the values.
SELECT snowid_ticket_create('rv_mark', 0, 1, 5);
SELECT snowid_ticket_next('rv_mark') FROM generate_series(1, 3);
BEGIN;
UPDATE snowid_ticket SET seqrelid = seqrelid
WHERE seqrelid = 'rv_mark'::regclass;
SELECT count(snowid_ticket_next('rv_mark')) FROM generate_series(1, 50);
ROLLBACK;
-- must be true: the mark is at or above every block the sequence handed out
SELECT t.served >= s.last_value AS mark_kept
FROM snowid_ticket t, rv_mark s
WHERE t.seqrelid = 'rv_mark'::regclass;

-- 2. ALTER TABLE ... SET UNLOGGED of a table that owns a ticket sequence
-- makes the sequence unlogged too (PostgreSQL 15 carries owned sequences
-- along); the ProcessUtility hook refuses only ALTER SEQUENCE|TABLE on the
-- sequence itself, so this passed and the ticket stayed unlogged.
SELECT snowid_ticket_create('rv_owned', 0, 1, 5);
CREATE TABLE rv_owner (id bigint);
ALTER SEQUENCE rv_owned OWNED BY rv_owner.id;
DO $$
BEGIN
	ALTER TABLE rv_owner SET UNLOGGED;
EXCEPTION WHEN feature_not_supported OR object_not_in_prerequisite_state THEN
	NULL;
END
$$;
-- must be p: the ticket sequence is still logged
SELECT relpersistence FROM pg_class WHERE oid = 'rv_owned'::regclass;

DROP TABLE rv_owner;
DROP SEQUENCE rv_mark;
