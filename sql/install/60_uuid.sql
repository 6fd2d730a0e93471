-- Snowids as RFC 9562 version 7 UUIDs (1.7): the time field is the ID's
-- time, the 74 bits left to the generator hold the ID itself.  Converting
-- reads the layout, so STABLE, as the decoders are.

CREATE FUNCTION snowid_to_uuid(id bigint)
RETURNS uuid
AS 'MODULE_PATHNAME', 'snowid_to_uuid'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_to_uuid(bigint) IS
'version 7 UUID of a Snowflake ID: the ID''s time in its Unix millisecond field, the ID itself in the other bits, so UUIDs sort as their IDs do';

CREATE FUNCTION snowid_from_uuid(id uuid)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_from_uuid'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_from_uuid(uuid) IS
'Snowflake ID a snowid_to_uuid() UUID holds; a UUID that snowid_to_uuid() under the layout in force would not make is an error (22023)';

CREATE FUNCTION snowid_next_uuid()
RETURNS uuid
AS 'MODULE_PATHNAME', 'snowid_next_uuid'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_next_uuid() IS
'next Snowflake ID of this server as a version 7 UUID: snowid_to_uuid(snowid_next())';

