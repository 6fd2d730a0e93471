/* snowid--1.1--1.2.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.2'" to load this file. \quit

-- Ticket sequences that cannot be rewound (issue 10, items 2 and 9).
-- Rows whose sequence is gone (dropped while event triggers were off) go;
-- every other ticket gets its served mark from its sequence and, through
-- the trigger, its dependency on the extension.
ALTER TABLE @extschema@.snowid_ticket ADD COLUMN served bigint NOT NULL DEFAULT -1;
REVOKE SELECT ON @extschema@.snowid_ticket FROM PUBLIC;
GRANT SELECT (seqrelid, shard, shards, block, start, type, stamp)
	ON @extschema@.snowid_ticket TO PUBLIC;

CREATE FUNCTION @extschema@.snowid_ticket_registered()
RETURNS trigger
AS 'MODULE_PATHNAME', 'snowid_ticket_registered'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.snowid_ticket_registered() IS
'trigger on snowid_ticket: makes a ticket sequence depend on the extension';

REVOKE ALL ON FUNCTION @extschema@.snowid_ticket_registered() FROM PUBLIC;

CREATE TRIGGER snowid_ticket_registered
AFTER INSERT OR UPDATE OF seqrelid ON @extschema@.snowid_ticket
FOR EACH ROW EXECUTE FUNCTION @extschema@.snowid_ticket_registered();

ALTER TABLE @extschema@.snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_registered;

DELETE FROM @extschema@.snowid_ticket t
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c
				  WHERE c.oid OPERATOR(pg_catalog.=) t.seqrelid::pg_catalog.oid
					AND c.relkind OPERATOR(pg_catalog.=) 'S');

UPDATE @extschema@.snowid_ticket
SET seqrelid = seqrelid,
	served = coalesce(pg_catalog.pg_sequence_last_value(seqrelid), -1);
