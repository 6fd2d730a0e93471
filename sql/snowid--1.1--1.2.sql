/* snowid--1.1--1.2.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.2'" to load this file. \quit

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
