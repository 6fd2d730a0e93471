/* snowid--1.1--1.2.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.2'" to load this file. \quit

-- Issue 10, item 11: the text form, snowid_to_text and snowid_from_text.

-- The text form (Crockford base32).  It depends on nothing but its
-- arguments, so IMMUTABLE.  Negative values have no code: 22023.

CREATE FUNCTION snowid_to_text(value bigint, with_check boolean DEFAULT true)
RETURNS text
AS 'MODULE_PATHNAME', 'snowid_to_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_to_text(bigint, boolean) IS
'Crockford base32 code of a snowid or ticket value (upper case, no padding), with a check symbol unless with_check is false; a negative value is an error (22023)';

CREATE FUNCTION snowid_from_text(code text, with_check boolean DEFAULT true)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_from_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_from_text(text, boolean) IS
'value of a Crockford base32 code: any case, I and L read as 1, O as 0, hyphens and leading zeros allowed, last symbol the check symbol unless with_check is false; a bad or wrong symbol is 22P02, a value beyond bigint 22003';

-- snowid.id_bits: snowid_layout() reports it in a new last column.  A
-- function's OUT parameters cannot change in place, so drop and re-create
-- it (a view that uses snowid_layout() has to be dropped first).

DROP FUNCTION snowid_layout();

CREATE FUNCTION snowid_layout(OUT epoch timestamptz,
							  OUT tick interval,
							  OUT timestamp_bits integer,
							  OUT node_bits integer,
							  OUT sequence_bits integer,
							  OUT node_id integer,
							  OUT ids_per_second bigint,
							  OUT last_timestamp timestamptz,
							  OUT id_bits integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_layout'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION snowid_layout() IS
'the Snowflake layout in force: epoch, tick, bit widths, node ID, capacity, end of life and the ID width (every ID is below 2^id_bits)';

-- issue 10, item 1: a changed layout continues above the last ID

CREATE FUNCTION snowid_id_above(id bigint, node integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_id_above'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_id_above(bigint, integer) IS
'smallest Snowflake ID of node in the layout in force above id (an ID of any layout): where a stream continues after a layout change; NULL if the layout has none';

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
