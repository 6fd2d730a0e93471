/* snowid--1.6--1.7.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.7'" to load this file. \quit

-- 1.7: ready to adopt (issue 24) and IDs beside uuidv7() (issue 25).

-- The ID span of an interval, for partitions by the time inside the ID
-- (issue 25).
CREATE FUNCTION snowid_interval(span interval)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_interval'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_interval(interval) IS
'ID span of a fixed-length interval under the layout in force: how much an ID grows while that much time passes (its ticks times 2^(node_bits + sequence_bits)); a day counts as 24 hours; for ID ranges such as partition bounds';
