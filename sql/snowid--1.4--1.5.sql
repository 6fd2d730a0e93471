/* snowid--1.4--1.5.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.5'" to load this file. \quit

-- 1.5: the registry trusts no caller (issue 22).  Leases belong to the
-- login role that took them, the registry decides lease lengths, takeover
-- delays and range sizes, members verify every answer, and no credential
-- is shown.

-- Pools clean up after themselves (issue 22, item 9): a pool that could
-- never serve (a start below 1) is refused at creation, ...

CREATE OR REPLACE FUNCTION snowid_pool_create(name text,
								   type regtype DEFAULT 'bigint',
								   start bigint DEFAULT 1,
								   upstream boolean DEFAULT false)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_name text := $1;
	v_type regtype := $2;
	v_start bigint := $3;
	v_upstream boolean := $4;
	v_max bigint;
BEGIN
	IF v_name IS NULL OR v_type IS NULL OR v_start IS NULL OR v_upstream IS NULL THEN
		RAISE EXCEPTION 'a pool needs a name, a type, a start and whether it is upstream'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF v_name !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' OR octet_length(v_name) > 63 THEN
		RAISE EXCEPTION 'invalid pool name "%"', v_name
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A pool name has 1 to 63 bytes of letters, digits, _, . and -, and does not start with . or -.';
	END IF;
	IF v_type = 'integer'::regtype THEN
		v_max := 2147483647;
	ELSIF v_type = 'bigint'::regtype THEN
		v_max := 9223372036854775807;
	ELSE
		RAISE EXCEPTION 'a pool''s type must be integer or bigint, not %', v_type
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF v_type = 'integer'::regtype AND
	   (v_start < -2147483648 OR v_start > 2147483647) THEN
		RAISE EXCEPTION 'start % is out of range for type integer', v_start
			USING ERRCODE = 'numeric_value_out_of_range';
	END IF;
	IF v_start < 1 THEN
		RAISE EXCEPTION 'a pool cannot start at %', v_start
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A pool''s values are 1 and more: members never hand out a value below 0, so ranges there would be lost.',
				  HINT = 'Start the pool at 1 or above.';
	END IF;
	IF v_upstream AND
	   coalesce(current_setting('snowid.registry', true), '') = '' THEN
		RAISE EXCEPTION 'an upstream pool needs a registry for this server'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'snowid.registry is not set on this server.',
				  HINT = 'Set snowid.registry to the registry the pool draws from, with snowid in shared_preload_libraries.';
	END IF;

	INSERT INTO @extschema@.snowid_pool AS p
		(name, type, start, maxvalue, next_value, upstream, created_at)
	VALUES (v_name, v_type, v_start, v_max,
			CASE WHEN v_upstream THEN NULL ELSE v_start END, v_upstream,
			pg_catalog.now())
	ON CONFLICT ON CONSTRAINT snowid_pool_pkey DO NOTHING;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'pool "%" already exists', v_name
			USING ERRCODE = 'duplicate_object';
	END IF;

	IF v_upstream THEN
		PERFORM @extschema@.snowid_pool_take(v_name, 0);
	END IF;
	RETURN v_name;
END
$$;

-- ... and snowid_pool_holdings() counts the registry's answers that
-- granted nothing usable (failures).
DROP FUNCTION snowid_pool_holdings();

CREATE FUNCTION snowid_pool_holdings(OUT pool text,
									 OUT type regtype,
									 OUT state text,
									 OUT first_value bigint,
									 OUT last_value bigint,
									 OUT next_value bigint,
									 OUT values_in_hand bigint,
									 OUT ranges integer,
									 OUT rate numeric,
									 OUT time_left interval,
									 OUT detail text,
									 OUT failures bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowid_pool_holdings'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_pool_holdings() IS
'the ranges of registry pools this server holds: the current range, the next value, the values in hand, the rate they are taken at (smoothed, half-life one minute), the time they last at it, and the registry''s answers that granted nothing usable';
