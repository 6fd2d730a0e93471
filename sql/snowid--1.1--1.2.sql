/* snowid--1.1--1.2.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.2'" to load this file. \quit

-- issue 10, item 1: a changed layout continues above the last ID

CREATE FUNCTION snowid_id_above(id bigint, node integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_id_above'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_id_above(bigint, integer) IS
'smallest Snowflake ID of node in the layout in force above id (an ID of any layout): where a stream continues after a layout change; NULL if the layout has none';
