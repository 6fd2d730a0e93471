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
-- the trigger, its dependency on the extension.  The table is locked first:
-- a reservation takes RowExclusiveLock on it before its slot lock, so it
-- waits (interruptibly) for this update to commit, and never finds the new
-- row versions made here in progress.
LOCK TABLE @extschema@.snowid_ticket IN EXCLUSIVE MODE;
ALTER TABLE @extschema@.snowid_ticket ADD COLUMN served bigint NOT NULL DEFAULT -1;
REVOKE SELECT ON @extschema@.snowid_ticket FROM PUBLIC;
GRANT SELECT (seqrelid, shard, shards, block, start, type, stamp)
	ON @extschema@.snowid_ticket TO PUBLIC;
GRANT SELECT ON @extschema@.snowid_ticket TO pg_database_owner;

CREATE FUNCTION @extschema@.snowid_ticket_registered()
RETURNS trigger
AS 'MODULE_PATHNAME', 'snowid_ticket_registered'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.snowid_ticket_registered() IS
'trigger on snowid_ticket: makes a ticket sequence depend on the extension, refuses changes to a ticket''s row and its deletion while the ticket exists';

REVOKE ALL ON FUNCTION @extschema@.snowid_ticket_registered() FROM PUBLIC;

CREATE TRIGGER snowid_ticket_registered
AFTER INSERT ON @extschema@.snowid_ticket
FOR EACH ROW EXECUTE FUNCTION @extschema@.snowid_ticket_registered();

ALTER TABLE @extschema@.snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_registered;

DELETE FROM @extschema@.snowid_ticket t
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c
				  WHERE c.oid OPERATOR(pg_catalog.=) t.seqrelid::pg_catalog.oid
					AND c.relkind OPERATOR(pg_catalog.=) 'S');

-- The marks, before snowid_ticket_fixed refuses any change of a row.
UPDATE @extschema@.snowid_ticket
SET served = coalesce(pg_catalog.pg_sequence_last_value(seqrelid), -1);

CREATE TRIGGER snowid_ticket_fixed
BEFORE UPDATE OR DELETE ON @extschema@.snowid_ticket
FOR EACH ROW EXECUTE FUNCTION @extschema@.snowid_ticket_registered();

ALTER TABLE @extschema@.snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_fixed;

-- Changes nothing: the trigger records each ticket's dependency.
UPDATE @extschema@.snowid_ticket SET seqrelid = seqrelid;

-- Issue 10, items 4 and 7 (search_path, positions shown without
-- privileges): the type check of snowid_ticket and the view snowid_tickets
-- use pg_catalog's operators only, so that nothing a user creates on the
-- search_path is bound into them; the view shows the position of a ticket
-- only to users with SELECT or USAGE on its sequence.
ALTER TABLE snowid_ticket DROP CONSTRAINT snowid_ticket_type_check;
ALTER TABLE snowid_ticket ADD CONSTRAINT snowid_ticket_type_check
	CHECK (type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype OR
		   type OPERATOR(pg_catalog.=) 'bigint'::pg_catalog.regtype);

-- Integer division with div(): numeric "/" rounds its result for large
-- operands, which would put last_value one stride too high.  Every operator
-- is pg_catalog's (OPERATOR(pg_catalog.x)): pg_catalog has no
-- =(regclass, regclass), for one, and an operator that a user creates in a
-- schema on the search_path would otherwise be bound into the view when it
-- is created (by CREATE EXTENSION or an update), and run as whoever reads
-- it.  The position (blocks reserved, cached block, values left) shows only
-- to users with SELECT or USAGE on the sequence; others get NULLs.
CREATE OR REPLACE VIEW snowid_tickets AS
SELECT t.seqrelid AS ticket,
	   t.type,
	   t.shard,
	   t.shards,
	   t.block,
	   t.start,
	   t.start OPERATOR(pg_catalog.+) t.shard AS first_value,
	   (t.start OPERATOR(pg_catalog.+) t.shard
		  OPERATOR(pg_catalog.+) (k.last_k OPERATOR(pg_catalog.*) t.shards))::bigint
		 AS last_value,
	   pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1 AS blocks_total,
	   r.blocks_reserved,
	   c.cached_first,
	   c.cached_last,
	   CASE WHEN p.allowed THEN coalesce(c.cached_values, 0) END AS cached_values,
	   CASE WHEN p.allowed THEN
		 k.last_k OPERATOR(pg_catalog.+) 1
		   OPERATOR(pg_catalog.-) least(k.last_k OPERATOR(pg_catalog.+) 1,
										r.blocks_reserved OPERATOR(pg_catalog.*) t.block)
		   OPERATOR(pg_catalog.+) coalesce(c.cached_values, 0)
	   END AS values_left
FROM snowid_ticket t
CROSS JOIN LATERAL (
	SELECT pg_catalog.div((CASE WHEN t.type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype
								THEN 2147483647 ELSE 9223372036854775807 END)::numeric
						  OPERATOR(pg_catalog.-) t.start OPERATOR(pg_catalog.-) t.shard,
						  t.shards) AS last_k) k
CROSS JOIN LATERAL (
	SELECT pg_catalog.has_sequence_privilege(t.seqrelid, 'SELECT, USAGE') AS allowed) p
CROSS JOIN LATERAL (
	SELECT CASE WHEN p.allowed
				THEN least(coalesce(pg_catalog.pg_sequence_last_value(t.seqrelid)
									  OPERATOR(pg_catalog.+) 1, 0),
						   pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1)
		   END AS blocks_reserved) r
LEFT JOIN snowid_ticket_cache() c ON c.ticket OPERATOR(pg_catalog.=) t.seqrelid;

-- A comment for the event trigger's function, which 1.1 lacked.
COMMENT ON FUNCTION snowid_ticket_dropped() IS
'event trigger on sql_drop: removes the row of snowid_ticket of a dropped ticket sequence (where snowid is not preloaded; with it, its object-access hook does it in every mode)';
