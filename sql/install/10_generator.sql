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

CREATE FUNCTION snowid_interval(span interval)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_interval'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_interval(interval) IS
'ID span of a fixed-length interval under the layout in force: how much an ID grows while that much time passes (its ticks times 2^(node_bits + sequence_bits)); a day counts as 24 hours; for ID ranges such as partition bounds';

CREATE FUNCTION snowid_id_above(id bigint, node integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_id_above'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_id_above(bigint, integer) IS
'smallest Snowflake ID of node in the layout in force above id (an ID of any layout): where a stream continues after a layout change; NULL if the layout has none';

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


