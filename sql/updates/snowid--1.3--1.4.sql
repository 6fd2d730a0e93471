/* snowid--1.3--1.4.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.4'" to load this file. \quit

-- 1.4: pools of values leased in ranges from the registry (registry side)
-- and ticket sequences fed by them (member side).

-- Pools, registry side (issue 13): values start .. maxvalue of a type,
-- handed out to members' background workers in increasing ranges.  A grant
-- is one short transaction: a compare-and-set of the pool's next_value
-- (retried when another grant moved it) and the row of the range; a member
-- asking again with the same request key after a lost reply gets the same
-- range back.  Members report the ranges they hold on every contact, and a
-- range the registry does not know (a grant lost in a failover) is recorded
-- and never handed out again.  An upstream pool (the datacenter tier) draws
-- its values from the pool of the same name on this server's own registry,
-- through the holdings in this server's shared memory (snowid_pool_take,
-- snowid_pool_skip and snowid_pool_untake).  Both tables are dumped with
-- their rows.

CREATE TABLE snowid_pool (
	name text PRIMARY KEY,
	type regtype NOT NULL
		CHECK (type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype OR
			   type OPERATOR(pg_catalog.=) 'bigint'::pg_catalog.regtype),
	start bigint NOT NULL,
	maxvalue bigint NOT NULL,
	next_value bigint,			-- lowest value never granted; NULL once all
								-- are (and for an upstream pool)
	upstream boolean NOT NULL,
	created_at timestamptz NOT NULL,
	CHECK (start OPERATOR(pg_catalog.<=) maxvalue),
	CHECK (next_value OPERATOR(pg_catalog.>=) start AND
		   next_value OPERATOR(pg_catalog.<=) maxvalue)
);

COMMENT ON TABLE snowid_pool IS
'registry: one row per pool: its type, first value, maximum and the lowest value never granted (written by snowid_pool_create and the grants)';

SELECT pg_catalog.pg_extension_config_dump('snowid_pool', '');

CREATE TABLE snowid_pool_range (
	pool text NOT NULL REFERENCES snowid_pool (name),
	node_id integer NOT NULL,
	holder text,				-- as snowid_registry_nodes.holder showed it
	system_identifier numeric(20,0),
	request text NOT NULL,		-- the member's request key ('reported:<first>'
								-- for a range recorded from a report)
	first_value bigint NOT NULL,
	last_value bigint NOT NULL,	-- as granted
	granted_at timestamptz NOT NULL,
	returned_from bigint,		-- NULL, or the first value given back: the
								-- range ends before it
	reported boolean NOT NULL,	-- recorded from a member's report
	PRIMARY KEY (pool, first_value),
	UNIQUE (pool, node_id, request),
	CHECK (first_value OPERATOR(pg_catalog.<=) last_value),
	CHECK (returned_from OPERATOR(pg_catalog.>=) first_value AND
		   returned_from OPERATOR(pg_catalog.<=) last_value)
);

COMMENT ON TABLE snowid_pool_range IS
'registry: one row per range of a pool granted to a member or reported by one: the node, its holder, the values and what was given back';

SELECT pg_catalog.pg_extension_config_dump('snowid_pool_range', '');

-- Only pg_catalog's operators and functions, as in snowid_registry_nodes.
-- The rate is that of the last hour's grants (ranges given back count only
-- what was kept); time_left is capped at 87,600,000 hours.
CREATE VIEW snowid_pools AS
SELECT p.name,
	   p.type,
	   p.start,
	   p.maxvalue,
	   p.next_value,
	   l.values_left,
	   p.upstream,
	   g.granted AS granted_last_hour,
	   CASE WHEN g.granted OPERATOR(pg_catalog.>) 0 AND l.values_left IS NOT NULL THEN
			pg_catalog.justify_hours('1 hour'::pg_catalog.interval OPERATOR(pg_catalog.*)
				least(l.values_left OPERATOR(pg_catalog./) g.granted,
					  87600000::pg_catalog.numeric)::pg_catalog.float8)
	   END AS time_left,
	   p.created_at
  FROM @extschema@.snowid_pool p
 CROSS JOIN LATERAL (
	SELECT CASE WHEN p.upstream THEN NULL
				WHEN p.next_value IS NULL THEN 0::pg_catalog.numeric
				ELSE p.maxvalue::pg_catalog.numeric OPERATOR(pg_catalog.-)
					 p.next_value::pg_catalog.numeric OPERATOR(pg_catalog.+)
					 1::pg_catalog.numeric
		   END AS values_left) l
 CROSS JOIN LATERAL (
	SELECT coalesce(pg_catalog.sum(
			   coalesce(r.returned_from::pg_catalog.numeric,
						r.last_value::pg_catalog.numeric OPERATOR(pg_catalog.+)
						1::pg_catalog.numeric)
			   OPERATOR(pg_catalog.-) r.first_value::pg_catalog.numeric),
			   0::pg_catalog.numeric) AS granted
	  FROM @extschema@.snowid_pool_range r
	 WHERE r.pool OPERATOR(pg_catalog.=) p.name AND NOT r.reported
	   AND r.granted_at OPERATOR(pg_catalog.>)
		   (pg_catalog.now() OPERATOR(pg_catalog.-) '1 hour'::pg_catalog.interval)) g;

COMMENT ON VIEW snowid_pools IS
'registry: every pool: its type, values, the lowest never granted, values left, values granted in the last hour and the time left at that rate';

CREATE VIEW snowid_pool_ranges AS
SELECT r.pool,
	   r.node_id,
	   r.holder,
	   r.first_value,
	   r.last_value,
	   r.granted_at,
	   r.returned_from IS NOT NULL AS returned,
	   r.returned_from,
	   r.reported
  FROM @extschema@.snowid_pool_range r;

COMMENT ON VIEW snowid_pool_ranges IS
'registry: every range granted or reported: pool, node, holder, values as granted, when, and whether an unused tail was given back';

REVOKE ALL ON snowid_pools, snowid_pool_ranges FROM PUBLIC;
GRANT SELECT ON snowid_pools, snowid_pool_ranges TO pg_monitor;
GRANT SELECT ON snowid_pool, snowid_pool_range TO pg_database_owner;
GRANT SELECT ON snowid_pools, snowid_pool_ranges TO pg_database_owner;

-- A pool on this registry.  Its name is what members name in
-- snowid_ticket_create(pool => ...), up to 63 bytes of letters, digits, _,
-- . and -.  An upstream pool needs snowid.registry on this server: it
-- attaches to the pool of the same name there at once, so that this
-- server's worker starts fetching ranges.
CREATE FUNCTION snowid_pool_create(name text,
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

REVOKE ALL ON FUNCTION snowid_pool_create(text, regtype, bigint, boolean) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_create(text, regtype, bigint, boolean) IS
'registry: creates a pool of values (integer or bigint, from start) handed out in ranges to members; upstream => true draws them from the pool of the same name on this server''s own registry';

-- A member's report of the ranges it holds (as granted): each one inside
-- its pool's values that no range row covers is recorded, and nothing up
-- to its end is granted again.  Pools are taken in name order, so that two
-- reports never wait for each other's pool rows in a cycle.
CREATE FUNCTION snowid_pool_report(p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_pool text[],
								   p_first bigint[],
								   p_last bigint[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_now timestamptz := pg_catalog.now();
	v_holder text;
	v_h record;
	v_after bigint;
	v_rows integer;
	v_count integer := 0;
BEGIN
	IF coalesce(cardinality(p_pool), 0) <> coalesce(cardinality(p_first), 0) OR
	   coalesce(cardinality(p_pool), 0) <> coalesce(cardinality(p_last), 0) THEN
		RAISE EXCEPTION 'a report needs as many first and last values as pools'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The report has %s pools, %s first values and %s last values.',
								  coalesce(cardinality(p_pool), 0),
								  coalesce(cardinality(p_first), 0),
								  coalesce(cardinality(p_last), 0));
	END IF;

	SELECT v.holder INTO v_holder
	  FROM @extschema@.snowid_registry_nodes v
	 WHERE v.node_id = p_node_id AND v.system_identifier = p_system_identifier
	   AND v.start_id = p_start_id;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;

	FOR v_h IN
		SELECT h.pool, h.lo, h.hi, p.upstream, p.maxvalue
		  FROM unnest(p_pool, p_first, p_last) AS h(pool, lo, hi)
		  JOIN @extschema@.snowid_pool p ON p.name = h.pool
		 WHERE h.lo <= h.hi AND h.lo >= p.start AND h.hi <= p.maxvalue
		 ORDER BY h.pool, h.lo
	LOOP
		CONTINUE WHEN EXISTS (
			SELECT FROM @extschema@.snowid_pool_range r
			 WHERE r.pool = v_h.pool AND r.first_value <= v_h.lo
			   AND v_h.hi <= r.last_value);
		IF v_h.upstream THEN
			PERFORM @extschema@.snowid_pool_skip(v_h.pool, v_h.hi);
		ELSE
			-- (hi + 1 is not written in the UPDATE: the planner would fold
			-- it, overflowing at the maximum, whatever CASE it is in)
			IF v_h.hi = v_h.maxvalue THEN
				v_after := NULL;
			ELSE
				v_after := v_h.hi + 1;
			END IF;
			-- before the row, so that a grant racing for the same values
			-- waits for this one on the pool row
			UPDATE @extschema@.snowid_pool p SET next_value = v_after
			 WHERE p.name = v_h.pool AND p.next_value <= v_h.hi;
		END IF;
		INSERT INTO @extschema@.snowid_pool_range AS r
			(pool, node_id, holder, system_identifier, request, first_value,
			 last_value, granted_at, returned_from, reported)
		VALUES (v_h.pool, p_node_id, v_holder, p_system_identifier,
				'reported:' || v_h.lo, v_h.lo, v_h.hi, v_now, NULL, true)
		ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_rows = ROW_COUNT;
		v_count := v_count + v_rows;
	END LOOP;
	RETURN v_count;
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_report(integer, numeric, text, text[], bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_report(integer, numeric, text, text[], bigint[], bigint[]) IS
'registry, internal: records the ranges a member holds that the registry does not know (a grant lost in a failover), so that they are never granted again; returns the number recorded';

-- A grant to a member's worker, in the order of the contract: an unknown
-- pool, a caller without the live lease of its node, the member's held
-- ranges recorded, a repeated request, the facts only (want 0), then a new
-- range: the lowest values never granted, want of them while at least four
-- times as many are left, near the end a quarter of what is left (at least
-- 64) so that several members share the end and all of it is used.
CREATE FUNCTION snowid_pool_grant(p_pool text,
								  p_node_id integer,
								  p_system_identifier numeric,
								  p_start_id text,
								  p_request text,
								  p_want bigint,
								  p_held_first bigint[],
								  p_held_last bigint[])
RETURNS TABLE (result text,
			   first_value bigint,
			   last_value bigint,
			   type regtype,
			   maxvalue bigint,
			   start bigint,
			   values_left bigint,
			   detail text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
ROWS 1
AS $$
DECLARE
	v_now timestamptz := pg_catalog.now();
	v_pool @extschema@.snowid_pool;
	v_node @extschema@.snowid_registry_node;
	v_range @extschema@.snowid_pool_range;
	v_holder text;
	v_next bigint;
	v_left numeric;
	v_n bigint;
	v_first bigint;
	v_last bigint;
	v_after bigint;
	v_state text;
	v_constraint text;
BEGIN
	IF p_want IS NULL OR p_want < 0 THEN
		RAISE EXCEPTION 'invalid number of values asked for: %', coalesce(p_want::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p_want > 0 AND p_request IS NULL THEN
		RAISE EXCEPTION 'a grant needs a request key'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF coalesce(cardinality(p_held_first), 0) <> coalesce(cardinality(p_held_last), 0) THEN
		RAISE EXCEPTION 'a grant needs as many last values as first values of the held ranges'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	-- 1. The pool.
	SELECT p.* INTO v_pool FROM @extschema@.snowid_pool p WHERE p.name = p_pool;
	IF NOT FOUND THEN
		result := 'unknown';
		detail := format('the registry has no pool named "%s"', p_pool);
		RETURN NEXT;
		RETURN;
	END IF;
	type := v_pool.type;
	maxvalue := v_pool.maxvalue;
	start := v_pool.start;

	-- 2. The caller holds its node under a live lease.
	SELECT n.* INTO v_node
	  FROM @extschema@.snowid_registry_node n WHERE n.node_id = p_node_id;
	IF NOT FOUND OR v_node.system_identifier IS DISTINCT FROM p_system_identifier OR
	   v_node.start_id IS DISTINCT FROM p_start_id OR
	   v_node.released_at IS NOT NULL OR v_node.lease_until <= v_now THEN
		result := 'refused';
		detail := CASE
			WHEN v_node.node_id IS NULL
				THEN format('node %s has never been claimed', p_node_id)
			WHEN v_node.system_identifier IS DISTINCT FROM p_system_identifier OR
				 v_node.start_id IS DISTINCT FROM p_start_id
				THEN format('node %s is held by another start (%s)', p_node_id,
							(SELECT v.holder FROM @extschema@.snowid_registry_nodes v
							  WHERE v.node_id = p_node_id))
			WHEN v_node.released_at IS NOT NULL
				THEN format('the lease of node %s was released', p_node_id)
			ELSE format('the lease of node %s has run out', p_node_id)
		END || '; only the holder of a live node lease is granted values';
		RETURN NEXT;
		RETURN;
	END IF;
	SELECT v.holder INTO v_holder
	  FROM @extschema@.snowid_registry_nodes v WHERE v.node_id = p_node_id;

	-- 3. The ranges the member holds of this pool.
	IF cardinality(p_held_first) > 0 THEN
		PERFORM @extschema@.snowid_pool_report(p_node_id, p_system_identifier,
											   p_start_id,
											   array_fill(p_pool, ARRAY[cardinality(p_held_first)]),
											   p_held_first, p_held_last);
	END IF;

	-- 4. A request asked again (its reply was lost): the same range.
	SELECT r.* INTO v_range
	  FROM @extschema@.snowid_pool_range r
	 WHERE r.pool = p_pool AND r.node_id = p_node_id AND r.request = p_request;
	IF FOUND THEN
		result := 'again';
	END IF;

	IF result IS NULL AND p_want > 0 THEN
		-- 6. and 7. A new range.  In a subtransaction: the same request
		-- granted at the same moment by another call (a retry while the
		-- first is still running) undoes this one and returns that one.
		BEGIN
			IF v_pool.upstream THEN
				SELECT t.first_value, t.last_value, t.state
				  INTO v_first, v_last, v_state
				  FROM @extschema@.snowid_pool_take(p_pool, p_want) t;
			ELSE
				LOOP
					SELECT p.next_value INTO v_next
					  FROM @extschema@.snowid_pool p WHERE p.name = p_pool;
					v_left := coalesce(v_pool.maxvalue::numeric - v_next + 1, 0);
					IF v_left = 0 THEN
						v_state := 'empty';
						EXIT;
					END IF;
					IF v_left >= 4 * p_want::numeric THEN
						v_n := p_want;
					ELSE
						v_n := least(p_want, greatest(ceil(v_left / 4), least(v_left, 64)));
					END IF;
					v_first := v_next;
					v_last := v_next + (v_n - 1);
					IF v_last = v_pool.maxvalue THEN
						v_after := NULL;
					ELSE
						v_after := v_last + 1;
					END IF;
					UPDATE @extschema@.snowid_pool p SET next_value = v_after
					 WHERE p.name = p_pool AND p.next_value = v_next;
					IF FOUND THEN
						v_state := 'ok';
						v_left := v_left - v_n;
						EXIT;
					END IF;
				END LOOP;
			END IF;

			IF v_state = 'ok' THEN
				-- a range given back whole, from where this one starts
				-- (upstream pools too: the holdings take it again)
				DELETE FROM @extschema@.snowid_pool_range r
				 WHERE r.pool = p_pool AND r.first_value = v_first
				   AND r.returned_from = r.first_value;
				INSERT INTO @extschema@.snowid_pool_range AS r
					(pool, node_id, holder, system_identifier, request, first_value,
					 last_value, granted_at, returned_from, reported)
				VALUES (p_pool, p_node_id, v_holder, p_system_identifier, p_request,
						v_first, v_last, v_now, NULL, false)
				RETURNING r.* INTO v_range;
				result := 'granted';
			END IF;
		EXCEPTION WHEN unique_violation THEN
			GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
			IF v_constraint IS DISTINCT FROM 'snowid_pool_range_pool_node_id_request_key' THEN
				RAISE;
			END IF;
			IF v_pool.upstream AND v_state = 'ok' THEN
				PERFORM @extschema@.snowid_pool_untake(p_pool, v_first, v_last);
			END IF;
			SELECT r.* INTO STRICT v_range
			  FROM @extschema@.snowid_pool_range r
			 WHERE r.pool = p_pool AND r.node_id = p_node_id
			   AND r.request = p_request;
			result := 'again';
			v_state := NULL;
		END;
	END IF;

	-- 8. The answer, with the values the pool has left.
	IF NOT v_pool.upstream AND (v_state IS NULL OR v_state <> 'ok') THEN
		SELECT coalesce(p.maxvalue::numeric - p.next_value + 1, 0) INTO v_left
		  FROM @extschema@.snowid_pool p WHERE p.name = p_pool;
	END IF;
	values_left := least(v_left, 9223372036854775807);
	IF result IS NULL AND p_want = 0 THEN
		result := 'info';
	ELSIF result IS NULL THEN
		result := CASE WHEN v_state IN ('wait', 'empty', 'unknown') THEN v_state END;
		IF result IS NULL THEN
			RAISE EXCEPTION 'unexpected state "%" of pool "%" in this server''s holdings',
				v_state, p_pool
				USING ERRCODE = 'internal_error';
		END IF;
		detail := CASE v_state
			WHEN 'empty' THEN format('every value of pool "%s" (%s to %s) has been granted',
									 p_pool, v_pool.start, v_pool.maxvalue)
			WHEN 'wait' THEN format('this registry has no range of upstream pool "%s" in hand yet',
									p_pool)
			ELSE format('the upstream registry has no pool named "%s"', p_pool)
		END;
	ELSE
		first_value := v_range.first_value;
		last_value := v_range.last_value;
		IF result = 'granted' AND v_last - v_first + 1 < p_want THEN
			detail := format('%s of the %s values asked for: the pool is nearly used up',
							 v_last - v_first + 1, p_want);
		END IF;
	END IF;
	RETURN NEXT;
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, bigint, bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, bigint, bigint[], bigint[]) IS
'registry, internal: grants a member (called by its background worker) the next range of a pool, or the same one again for a repeated request; granted, again, info, empty, wait, refused or unknown';

-- A member's clean shutdown gives back the unused tail [unused_from,
-- last_value] of the range holding p_first_value, if no grant came after it; a tail given back
-- whole makes way for the next grant from the same first value.
CREATE FUNCTION snowid_pool_return(p_pool text,
								   p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_first_value bigint,
								   p_unused_from bigint)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_range @extschema@.snowid_pool_range;
	v_pool @extschema@.snowid_pool;
	v_end bigint;
	v_done boolean;
BEGIN
	-- the range holding p_first_value: the member may name its range by
	-- any value in it (it knows where its unused tail begins; a tail it
	-- kept at an earlier shutdown is all it still holds of a range)
	SELECT r.* INTO v_range
	  FROM @extschema@.snowid_pool_range r
	 WHERE r.pool = p_pool AND r.first_value <= p_first_value
	   AND r.last_value >= p_first_value
	 ORDER BY r.granted_at DESC, r.first_value DESC
	 LIMIT 1
	   FOR UPDATE;
	IF NOT FOUND THEN
		RETURN 'unknown';
	END IF;
	IF v_range.node_id IS DISTINCT FROM p_node_id OR
	   v_range.system_identifier IS DISTINCT FROM p_system_identifier THEN
		RETURN 'kept';
	END IF;
	-- Only the start that holds the node gives back: an old primary that
	-- a promoted standby (same system identifier, the same ranges from the
	-- WAL) took the node from must not free values the standby goes on
	-- handing out.
	IF NOT EXISTS (SELECT 1 FROM @extschema@.snowid_registry_node n
				   WHERE n.node_id = p_node_id
					 AND n.system_identifier = p_system_identifier
					 AND n.start_id = p_start_id
					 AND n.released_at IS NULL) THEN
		RETURN 'kept';
	END IF;
	IF p_unused_from IS NULL OR p_unused_from < v_range.first_value OR
	   p_unused_from > v_range.last_value THEN
		RAISE EXCEPTION 'value % is not in the range % to % of pool "%"',
			coalesce(p_unused_from::text, 'NULL'), v_range.first_value,
			v_range.last_value, p_pool
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF v_range.returned_from IS NOT NULL THEN
		-- given back already (a retry after a lost reply)
		RETURN CASE WHEN p_unused_from >= v_range.returned_from
					THEN 'returned' ELSE 'kept' END;
	END IF;

	SELECT p.* INTO v_pool FROM @extschema@.snowid_pool p WHERE p.name = p_pool;
	IF v_pool.upstream THEN
		v_done := @extschema@.snowid_pool_untake(p_pool, p_unused_from,
												 v_range.last_value);
	ELSE
		-- the pool's next_value if no grant came after the range (NULL
		-- after a range that ends at the maximum)
		IF v_range.last_value = v_pool.maxvalue THEN
			v_end := NULL;
		ELSE
			v_end := v_range.last_value + 1;
		END IF;
		UPDATE @extschema@.snowid_pool p SET next_value = p_unused_from
		 WHERE p.name = p_pool AND p.next_value IS NOT DISTINCT FROM v_end;
		v_done := FOUND;
	END IF;
	IF NOT v_done THEN
		RETURN 'kept';
	END IF;
	UPDATE @extschema@.snowid_pool_range r SET returned_from = p_unused_from
	 WHERE r.pool = p_pool AND r.first_value = v_range.first_value;
	RETURN 'returned';
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_return(text, integer, numeric, text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_return(text, integer, numeric, text, bigint, bigint) IS
'registry, internal: takes back the unused tail of a member''s range at its clean shutdown: returned, kept (a later grant came after it) or unknown';

CREATE FUNCTION snowid_pool_owner(pool text, value bigint)
RETURNS integer
LANGUAGE sql
STABLE STRICT PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
SELECT r.node_id
  FROM @extschema@.snowid_pool_range r
 WHERE r.pool = $1 AND r.first_value <= $2
   AND CASE WHEN r.returned_from IS NULL THEN $2 <= r.last_value
			ELSE $2 < r.returned_from END
 ORDER BY r.granted_at DESC, r.first_value DESC
 LIMIT 1
$$;

REVOKE ALL ON FUNCTION snowid_pool_owner(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowid_pool_owner(text, bigint) TO pg_monitor, pg_database_owner;

COMMENT ON FUNCTION snowid_pool_owner(text, bigint) IS
'registry: the node ID whose range of the pool holds the value (the latest granted where ranges overlap), NULL if none';
-- pooled tickets (member side)
--
-- The ranges of registry pools this server holds (pool.c), shared by every
-- database: the functions read and take this server's holdings, not rows.

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
									 OUT detail text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowid_pool_holdings'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_pool_holdings() IS
'the ranges of registry pools this server holds: the current range, the next value, the values in hand, the rate they are taken at and the time they last at it';

-- For the registry functions of an upstream pool (a datacenter registry
-- serving its members from this server's holdings): not for users.
CREATE FUNCTION snowid_pool_take(pool text, n bigint,
								 OUT first_value bigint,
								 OUT last_value bigint,
								 OUT state text)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_pool_take_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_take(text, bigint) IS
'take up to n consecutive values of pool from this server''s holdings (state ok, wait, empty, unknown or closed); n = 0 only starts fetching ranges';

REVOKE ALL ON FUNCTION snowid_pool_take(text, bigint) FROM PUBLIC;

CREATE FUNCTION snowid_pool_skip(pool text, through bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'snowid_pool_skip_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_skip(text, bigint) IS
'never hand out a value of pool at or below through from this server''s holdings (persisted)';

REVOKE ALL ON FUNCTION snowid_pool_skip(text, bigint) FROM PUBLIC;

CREATE FUNCTION snowid_pool_untake(pool text, first_value bigint,
								   last_value bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowid_pool_untake_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_untake(text, bigint, bigint) IS
'put values first_value .. last_value of pool back into this server''s holdings if they are the last taken; false otherwise';

REVOKE ALL ON FUNCTION snowid_pool_untake(text, bigint, bigint) FROM PUBLIC;

-- A ticket fed by a pool: its blocks come from the pool's ranges, not from
-- its sequence (which stays, for its name, privileges, DROP and pg_dump).
ALTER TABLE snowid_ticket ADD COLUMN pool text;	-- NULL: striped

GRANT SELECT (pool) ON snowid_ticket TO PUBLIC;

DROP FUNCTION snowid_ticket_create(text, integer, integer, integer, bigint, regtype);

-- Not STRICT: pool is NULL for a striped ticket.
CREATE FUNCTION snowid_ticket_create(name text,
									 shard integer DEFAULT 0,
									 shards integer DEFAULT 1,
									 block integer DEFAULT 1000,
									 start bigint DEFAULT 1,
									 type regtype DEFAULT 'bigint',
									 pool text DEFAULT NULL)
RETURNS regclass
AS 'MODULE_PATHNAME', 'snowid_ticket_create'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_ticket_create(text, integer, integer, integer, bigint, regtype, text) IS
'create ticket sequence name, issuing start + shard + k * shards on this server, or, with pool, values of ranges leased from that registry pool';

-- As before, with the pool at the end; for a pooled ticket the counts of
-- blocks and values left are the pool's business (snowid_pool_holdings()).
CREATE OR REPLACE VIEW snowid_tickets AS
SELECT t.seqrelid AS ticket,
	   t.type,
	   t.shard,
	   t.shards,
	   t.block,
	   t.start,
	   t.start OPERATOR(pg_catalog.+) t.shard AS first_value,
	   CASE WHEN t.pool IS NULL THEN
		 (t.start OPERATOR(pg_catalog.+) t.shard
			OPERATOR(pg_catalog.+) (k.last_k OPERATOR(pg_catalog.*) t.shards))::bigint
	   END AS last_value,
	   CASE WHEN t.pool IS NULL THEN
		 pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1
	   END AS blocks_total,
	   r.blocks_reserved,
	   c.cached_first,
	   c.cached_last,
	   CASE WHEN p.allowed THEN coalesce(c.cached_values, 0) END AS cached_values,
	   CASE WHEN p.allowed AND t.pool IS NULL THEN
		 k.last_k OPERATOR(pg_catalog.+) 1
		   OPERATOR(pg_catalog.-) least(k.last_k OPERATOR(pg_catalog.+) 1,
										r.blocks_reserved OPERATOR(pg_catalog.*) t.block)
		   OPERATOR(pg_catalog.+) coalesce(c.cached_values, 0)
	   END AS values_left,
	   t.pool
FROM snowid_ticket t
CROSS JOIN LATERAL (
	SELECT pg_catalog.div((CASE WHEN t.type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype
								THEN 2147483647 ELSE 9223372036854775807 END)::numeric
						  OPERATOR(pg_catalog.-) t.start OPERATOR(pg_catalog.-) t.shard,
						  t.shards) AS last_k) k
CROSS JOIN LATERAL (
	SELECT pg_catalog.has_sequence_privilege(t.seqrelid, 'SELECT, USAGE') AS allowed) p
CROSS JOIN LATERAL (
	SELECT CASE WHEN p.allowed AND t.pool IS NULL
				THEN least(coalesce(pg_catalog.pg_sequence_last_value(t.seqrelid)
									  OPERATOR(pg_catalog.+) 1, 0),
						   pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1)
		   END AS blocks_reserved) r
LEFT JOIN snowid_ticket_cache() c ON c.ticket OPERATOR(pg_catalog.=) t.seqrelid;

COMMENT ON VIEW snowid_tickets IS
'ticket sequences of this database: settings, blocks reserved, the block cached on this server, the values left for this shard, and the pool of a pooled ticket';
