/* snowid--1.0.sql */

\echo Use "CREATE EXTENSION snowid" to load this file. \quit

-- Generators: volatile by nature, and PARALLEL RESTRICTED because renewing
-- the persisted reservation writes WAL, which only the leader may do.

CREATE FUNCTION snowid_next()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_next'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_next() IS
'next Snowflake ID of this server (needs snowid in shared_preload_libraries and snowid.node_id)';

CREATE FUNCTION snowid_next_batch(n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowid_next_batch'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
ROWS 1000;

COMMENT ON FUNCTION snowid_next_batch(integer) IS
'n consecutive Snowflake IDs of this server, reserved at once, in increasing order';

-- Decoders: they depend on the layout parameters, which are fixed while the
-- server runs but may differ after a restart, so STABLE rather than
-- IMMUTABLE (an index on them could silently go wrong after a layout change;
-- index the ID itself and use snowid_from_timestamp for time ranges).

CREATE FUNCTION snowid_timestamp(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowid_timestamp'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_timestamp(bigint) IS
'start of the tick a Snowflake ID was issued in';

CREATE FUNCTION snowid_node(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowid_node'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_node(bigint) IS
'node ID embedded in a Snowflake ID';

CREATE FUNCTION snowid_sequence(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowid_sequence'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_sequence(bigint) IS
'per-tick sequence number embedded in a Snowflake ID';

CREATE FUNCTION snowid_decode(id bigint,
							  OUT ts timestamptz,
							  OUT node integer,
							  OUT sequence integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_decode'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_decode(bigint) IS
'timestamp, node and sequence of a Snowflake ID';

CREATE FUNCTION snowid_from_timestamp(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_from_timestamp'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_from_timestamp(timestamptz) IS
'smallest Snowflake ID any node can issue in the tick containing ts, for range scans on ID columns';

CREATE FUNCTION snowid_layout(OUT epoch timestamptz,
							  OUT tick interval,
							  OUT timestamp_bits integer,
							  OUT node_bits integer,
							  OUT sequence_bits integer,
							  OUT node_id integer,
							  OUT ids_per_second bigint,
							  OUT last_timestamp timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_layout'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION snowid_layout() IS
'the Snowflake layout in force: epoch, tick, bit widths, node ID, capacity and end of life';

CREATE FUNCTION snowid_stats(OUT ids_issued bigint,
							 OUT ticks_borrowed bigint,
							 OUT waits bigint,
							 OUT wait_time_ms double precision,
							 OUT clock_errors bigint,
							 OUT clock_regressions bigint,
							 OUT largest_regression_ms double precision,
							 OUT last_id bigint,
							 OUT lead_ms double precision,
							 OUT reserved_until timestamptz,
							 OUT reservations bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_stats'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowid_stats() IS
'what the Snowflake generator of this server has done since it started';
