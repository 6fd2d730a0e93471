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
	start_id text,				-- the start it was granted to or reported by
	holder_role name,			-- and its login role (NULL: before 1.5)
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

REVOKE ALL ON FUNCTION snowid_pool_create(text, regtype, bigint, boolean) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_create(text, regtype, bigint, boolean) IS
'registry: creates a pool of values (integer or bigint, from start) handed out in ranges to members; upstream => true draws them from the pool of the same name on this server''s own registry';

-- The pool's row locked for this transaction, not waited for
-- (lock_not_available while another transaction holds it: the caller
-- answers busy or keeps the range, and the member asks again).  Every
-- call on pools is applied by the first of the registry's server
-- processes (2.0), so the only other holder is a superuser's own
-- transaction (snowid_pool_create, or rows written by hand); no session is
-- ended for it (2.1).
CREATE FUNCTION snowid_pool_lock(p_pool text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM FROM @extschema@.snowid_pool p WHERE p.name = p_pool
	  FOR UPDATE NOWAIT;
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_lock(text) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_lock(text) IS
'registry, internal: locks a pool''s row for a grant, report or return without waiting (lock_not_available while another transaction holds it)';

-- Where the grants of pool p_pool that a registry which may have forgotten
-- since p_since (snowid_registry_recovery: a start, a promotion, a
-- restore) lost could have reached: the highest value they could have
-- granted, however much was lost.  The restored state is what the tables
-- hold from before p_since: its lowest value never granted (above every
-- range recorded before then, or the pool's start) and its newest time
-- (the latest range granted or node seen before then, or the pool's
-- creation).  From that time until p_since the lost registry granted each
-- login role that may ask for ranges (not a superuser, EXECUTE on
-- snowid_pool_grant) at most max_grants_per_hour ranges of the pool for
-- each hour begun, each at most max_grant_share of what was left and at
-- least 1,024 values: k such grants leave at least
-- left * (1 - share)^k - 1,024 * min(k, 1 / share) values.  Nothing here
-- depends on what a member says.  A superuser's grants are not limited and
-- not counted; the settings are those restored.
CREATE FUNCTION snowid_pool_lost_bound(p_pool text, p_since timestamptz)
RETURNS bigint
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_pool @extschema@.snowid_pool;
	v_from numeric;
	v_then timestamptz;
	v_share double precision;
	v_limit integer;
	v_roles bigint;
	v_grants numeric;
	v_log double precision;
	v_kept numeric;
BEGIN
	SELECT p.* INTO v_pool FROM @extschema@.snowid_pool p WHERE p.name = p_pool;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	SELECT greatest(v_pool.start::numeric, max(r.last_value)::numeric + 1),
		   greatest(v_pool.created_at, max(r.granted_at))
	  INTO v_from, v_then
	  FROM @extschema@.snowid_pool_range r
	 WHERE r.pool = p_pool AND r.granted_at < p_since;
	v_then := greatest(v_then, (SELECT max(n.last_seen)
								  FROM @extschema@.snowid_registry_node n
								 WHERE n.last_seen < p_since));
	IF v_from > v_pool.maxvalue THEN
		RETURN v_pool.maxvalue;
	END IF;
	SELECT coalesce(max(s.max_grant_share), 0.01), coalesce(max(s.max_grants_per_hour), 60)
	  INTO v_share, v_limit
	  FROM @extschema@.snowid_registry_settings s;
	SELECT greatest(count(*), 1) INTO v_roles
	  FROM pg_roles r
	 WHERE r.rolcanlogin AND NOT r.rolsuper
	   AND has_function_privilege(r.oid,
			   format('%I.snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])',
					  '@extschema@')::regprocedure::oid,
			   'EXECUTE');
	v_grants := v_roles::numeric * v_limit *
		greatest(ceil(EXTRACT(epoch FROM p_since - v_then) / 3600), 1);
	v_log := v_grants::double precision * ln(1 - v_share);
	-- (the float's rounding taken off what is left, never added)
	v_kept := floor((v_pool.maxvalue::numeric - v_from + 1) *
					CASE WHEN v_log < -700 THEN 0 ELSE exp(v_log) END::numeric * 0.999999
					- 1024 * least(v_grants, ceil(1 / v_share)::numeric) - 1);
	RETURN v_pool.maxvalue::numeric - greatest(v_kept, 0);
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_lost_bound(text, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_lost_bound(text, timestamptz) IS
'registry, internal: the highest value of a pool that the grants a registry may have forgotten since the given time could have reached: every member role''s max_grants_per_hour for each hour begun since the newest time its restored tables record, each at most max_grant_share of what was left';

-- A member's report of the ranges it holds (as granted): each one inside
-- its pool's values that no range row covers is recorded, and nothing up
-- to its end is granted again.  Pools are taken in name order, so that two
-- reports never wait for each other's pool rows in a cycle.  A range that
-- moves the pool (reaching its lowest value never granted) must lie where
-- one grant to the reporter could have been: ending within one grant's
-- size (max_grant_share) of that value as the call found it, or, while the
-- registry may have forgotten (snowid_registry_recovery), where the grants
-- it may have lost could have reached (snowid_pool_lost_bound: a restore
-- loses many grants, and the members holding them report during the
-- grace); and counted with the role's grants against max_grants_per_hour.
-- For an upstream pool (1.11) the same holds of this server's holdings
-- (snowid_pool_reach): a range that reaches the next value in hand ends
-- within the first range in hand, or, while the registry may have
-- forgotten, within the last.  Otherwise the call is refused (22023) and
-- records nothing (an upstream pool's holdings skip only once every range
-- passed).  A superuser's calls are not bounded, as its grants are not.
CREATE FUNCTION snowid_pool_report_serve(p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_secret text,
								   p_pool text[],
								   p_first bigint[],
								   p_last bigint[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
	v_now timestamptz := pg_catalog.now();
	v_holder text;
	v_h record;
	v_after bigint;
	v_rows integer;
	v_count integer := 0;
	v_share double precision;
	v_super boolean;
	v_next bigint;
	v_left numeric;
	v_n numeric;
	v_bound_pool text;
	v_bound numeric;
	v_moves bigint;
	v_limit integer;
	v_request text;
	v_one numeric;
	v_lost bigint;
	v_since timestamptz;
	v_since_read boolean := false;
	v_reach record;
	v_skip_pool text[] := '{}';
	v_skip_hi bigint[] := '{}';
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

	-- Only the live holder of the node (its login role and start's
	-- secret) reports for it; but while the registry may have forgotten
	-- (snowid_registry_recovery), any caller does, for the node it names,
	-- recorded without a holder (1.11): a member that started again since
	-- the backup was taken holds no lease the restored registry knows
	-- until the grace ends, and what a report may move is bounded by what
	-- the registry may have lost and by the caller's grants, not by who
	-- sends it.  (A range recorded from a report is never given back.)
	IF @extschema@.snowid_registry_holds(p_node_id, p_system_identifier,
										 p_start_id, p_secret) THEN
		SELECT v.holder INTO v_holder
		  FROM @extschema@.snowid_registry_nodes v WHERE v.node_id = p_node_id;
	ELSE
		SELECT r.since INTO v_since
		  FROM @extschema@.snowid_registry_recovery() r;
		v_since_read := true;
		IF v_since IS NULL THEN
			RETURN 0;
		END IF;
	END IF;
	SELECT s.max_grant_share, s.max_grants_per_hour INTO v_share, v_limit
	  FROM @extschema@.snowid_registry_settings s;
	v_share := coalesce(v_share, 0.01);
	v_limit := coalesce(v_limit, 60);
	v_super := coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r
						  WHERE r.rolname = session_user), false);

	-- A lost grant is no longer than the largest grant the pool could have
	-- made, overlaps no range the registry knows, and a member holds at
	-- most 4 ranges of a pool: anything else is not recorded, so that no
	-- report empties a pool or takes values granted to another.
	FOR v_h IN
		SELECT h.pool, h.lo, h.hi, p.upstream, p.maxvalue
		  FROM (SELECT u.pool, u.lo, u.hi,
					   pg_catalog.row_number() OVER (PARTITION BY u.pool ORDER BY u.lo) AS nth
				  FROM unnest(p_pool, p_first, p_last) AS u(pool, lo, hi)) h
		  JOIN @extschema@.snowid_pool p ON p.name = h.pool
		 WHERE h.lo <= h.hi AND h.lo >= p.start AND h.hi <= p.maxvalue
		   AND h.nth <= 4
		   AND h.hi::numeric - h.lo + 1 <=
			   greatest(ceil((p.maxvalue::numeric - p.start + 1) * v_share::numeric), 1024)
		 ORDER BY h.pool, h.lo
	LOOP
		-- (while the registry may have forgotten, a range given back counts
		-- for what its holder kept only: the values given back are free
		-- again here, and a member reporting them was granted them since,
		-- by the registry this one forgot; otherwise this registry knows
		-- its grants, and a report over values given back is a member's
		-- mark, not a range)
		IF NOT v_since_read THEN
			SELECT r.since INTO v_since
			  FROM @extschema@.snowid_registry_recovery() r;
			v_since_read := true;
		END IF;
		-- (nor, in the grace, a range reported in it: a report at one
		-- value must not make the registry skip the range a holder reports
		-- after it, whose values would be granted again)
		CONTINUE WHEN EXISTS (
			SELECT FROM @extschema@.snowid_pool_range r
			 WHERE r.pool = v_h.pool AND r.first_value <= v_h.hi
			   AND v_h.lo <= CASE WHEN v_since IS NULL THEN r.last_value
								  ELSE coalesce(r.returned_from - 1, r.last_value) END
			   AND (v_since IS NULL OR NOT r.reported OR r.granted_at < v_since));
		v_request := NULL;
		IF v_h.upstream AND NOT v_super THEN
			-- An upstream pool hands out what this server holds of it
			-- (snowid_pool_take), and a report skips past the values it
			-- names there for good: one that reaches the next value in
			-- hand must lie where one grant to the reporter could have
			-- been, within the first range in hand (a take goes no
			-- further), or, while the registry may have forgotten,
			-- within what it holds; and it counts as a grant.  (1.10 let
			-- a report at the pool's top empty the holdings.)
			PERFORM @extschema@.snowid_pool_lock(v_h.pool);
			IF v_bound_pool IS DISTINCT FROM v_h.pool THEN
				-- as the call found the holdings
				v_bound_pool := v_h.pool;
				SELECT r.next_value, r.take_last, r.held_last
				  INTO v_reach
				  FROM @extschema@.snowid_pool_reach(v_h.pool) r;
				IF NOT v_since_read THEN
					SELECT r.since INTO v_since
					  FROM @extschema@.snowid_registry_recovery() r;
					v_since_read := true;
				END IF;
				v_bound := CASE WHEN v_since IS NULL THEN v_reach.take_last
								ELSE v_reach.held_last END;
				SELECT count(*) INTO v_moves
				  FROM @extschema@.snowid_pool_range r
				 WHERE r.pool = v_h.pool AND r.holder_role = session_user
				   AND (NOT r.reported OR r.request LIKE 'reported+:%')
				   AND r.granted_at > v_now - interval '1 hour';
			END IF;
			IF v_h.hi >= v_reach.next_value THEN
				IF v_bound IS NULL OR v_h.hi > v_bound THEN
					RAISE EXCEPTION 'values % to % of upstream pool "%" are not where a grant to this member could have been',
						v_h.lo, v_h.hi, v_h.pool
						USING ERRCODE = 'invalid_parameter_value',
							  DETAIL = CASE WHEN v_reach.take_last IS NULL THEN
								  format('This registry holds no values of the pool from its upstream registry now, and hands out none at or above %s; nothing of this report is recorded.',
										 v_reach.next_value)
							  WHEN v_since IS NULL THEN
								  format('The next value this registry hands out is %s, and one grant from there ends at %s at the most (the end of the range it holds from its upstream registry); nothing of this report is recorded.',
										 v_reach.next_value, v_reach.take_last)
							  ELSE
								  format('The next value this registry hands out is %s, and the values it holds from its upstream registry end at %s; nothing of this report is recorded.',
										 v_reach.next_value, v_reach.held_last)
							  END,
							  HINT = 'A member reports only ranges it was granted.';
				END IF;
				IF v_moves >= v_limit THEN
					RAISE EXCEPTION 'this login role was granted or reported % ranges of pool "%" in the last hour, the most the registry grants',
						v_moves, v_h.pool
						USING ERRCODE = 'invalid_parameter_value',
							  DETAIL = 'A report that moves a pool counts as a grant (snowid_registry_settings.max_grants_per_hour); nothing of this report is recorded.';
				END IF;
				v_moves := v_moves + 1;
				v_request := 'reported+:' || v_h.lo;
			END IF;
			-- (after every range is checked: a refused report skips nothing)
			v_skip_pool := v_skip_pool || v_h.pool;
			v_skip_hi := v_skip_hi || v_h.hi;
		ELSIF v_h.upstream THEN
			v_skip_pool := v_skip_pool || v_h.pool;
			v_skip_hi := v_skip_hi || v_h.hi;
		ELSE
			-- (hi + 1 is not written in the UPDATE: the planner would fold
			-- it, overflowing at the maximum, whatever CASE it is in)
			IF v_h.hi = v_h.maxvalue THEN
				v_after := NULL;
			ELSE
				v_after := v_h.hi + 1;
			END IF;
			-- before the row, so that a grant racing for the same values
			-- finds the pool row locked
			PERFORM @extschema@.snowid_pool_lock(v_h.pool);
			SELECT p.next_value INTO v_next
			  FROM @extschema@.snowid_pool p WHERE p.name = v_h.pool;
			IF v_h.hi >= v_next AND NOT v_super THEN
				IF v_bound_pool IS DISTINCT FROM v_h.pool THEN
					-- the most one grant could take from where the pool
					-- stands (as snowid_pool_grant sizes it for any want)
					v_bound_pool := v_h.pool;
					v_left := v_h.maxvalue::numeric - v_next + 1;
					v_n := greatest(ceil(v_left * v_share::numeric), 1024);
					IF v_left < 4 * v_n THEN
						v_n := least(v_n, greatest(ceil(v_left / 4), least(v_left, 64)));
					END IF;
					v_one := v_next::numeric + v_n - 1;
					v_bound := v_one;
					-- while the registry may have forgotten: as far as
					-- the grants it may have lost could have reached
					IF NOT v_since_read THEN
						SELECT r.since INTO v_since
						  FROM @extschema@.snowid_registry_recovery() r;
						v_since_read := true;
					END IF;
					v_lost := NULL;
					IF v_since IS NOT NULL THEN
						v_lost := @extschema@.snowid_pool_lost_bound(v_h.pool, v_since);
						v_bound := greatest(v_bound, v_lost);
					END IF;
					SELECT count(*) INTO v_moves
					  FROM @extschema@.snowid_pool_range r
					 WHERE r.pool = v_h.pool AND r.holder_role = session_user
					   AND (NOT r.reported OR r.request LIKE 'reported+:%')
					   AND r.granted_at > v_now - interval '1 hour';
				END IF;
				IF v_h.hi > v_bound THEN
					RAISE EXCEPTION 'values % to % of pool "%" are not where a grant to this member could have been',
						v_h.lo, v_h.hi, v_h.pool
						USING ERRCODE = 'invalid_parameter_value',
							  DETAIL = CASE WHEN v_lost IS NULL THEN
								  format('The pool has granted the values below %s, and one grant from there ends at %s at the most (snowid_registry_settings.max_grant_share); nothing of this report is recorded.',
										 v_next, v_one)
							  ELSE
								  format('The pool has granted the values below %s, one grant from there ends at %s at the most (snowid_registry_settings.max_grant_share), and the grants this registry may have forgotten since %s end at %s at the most (snowid_registry_settings.max_grants_per_hour); nothing of this report is recorded.',
										 v_next, v_one, v_since, v_lost)
							  END,
							  HINT = 'A member reports only ranges it was granted.  After the grace that follows a start, promotion or restore of the registry, a pool that lost more than one grant needs a superuser to set its next_value above every range still held.';
				END IF;
				IF v_moves >= v_limit THEN
					RAISE EXCEPTION 'this login role was granted or reported % ranges of pool "%" in the last hour, the most the registry grants',
						v_moves, v_h.pool
						USING ERRCODE = 'invalid_parameter_value',
							  DETAIL = 'A report that moves a pool counts as a grant (snowid_registry_settings.max_grants_per_hour); nothing of this report is recorded.';
				END IF;
				v_moves := v_moves + 1;
				v_request := 'reported+:' || v_h.lo;
			ELSE
				v_request := 'reported:' || v_h.lo;
			END IF;
			UPDATE @extschema@.snowid_pool p SET next_value = v_after
			 WHERE p.name = v_h.pool AND p.next_value <= v_h.hi;
		END IF;
		-- a range given back whole where this one starts makes way for it;
		-- one that overlaps what a row holds (one reported in the grace)
		-- is not recorded, the pool's next_value keeping its values: rows
		-- never overlap
		DELETE FROM @extschema@.snowid_pool_range r
		 WHERE r.pool = v_h.pool AND r.first_value = v_h.lo
		   AND r.returned_from = r.first_value;
		INSERT INTO @extschema@.snowid_pool_range AS r
			(pool, node_id, holder, system_identifier, request, first_value,
			 last_value, granted_at, returned_from, reported, start_id, holder_role)
		SELECT v_h.pool, p_node_id, v_holder, p_system_identifier,
			   coalesce(v_request, 'reported:' || v_h.lo), v_h.lo, v_h.hi, v_now, NULL, true,
			   p_start_id, pg_catalog.session_user()
		 WHERE NOT EXISTS (
			SELECT FROM @extschema@.snowid_pool_range o
			 WHERE o.pool = v_h.pool AND o.first_value <= v_h.hi
			   AND v_h.lo <= coalesce(o.returned_from - 1, o.last_value))
		ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_rows = ROW_COUNT;
		v_count := v_count + v_rows;
	END LOOP;
	FOR v_i IN 1 .. coalesce(cardinality(v_skip_pool), 0) LOOP
		PERFORM @extschema@.snowid_pool_skip(v_skip_pool[v_i], v_skip_hi[v_i]);
	END LOOP;
	RETURN v_count;
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_report_serve(integer, numeric, text, text, text[], bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_report_serve(integer, numeric, text, text, text[], bigint[], bigint[]) IS
'registry, internal: what snowid_pool_report does, applied by the registry''s server process in a transaction of its own, session_user being the member''s role; no member may call it';

-- What a member calls: the call goes to the registry's server process
-- (registry_server.c), which applies snowid_pool_report_serve.
CREATE FUNCTION snowid_pool_report(p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_secret text,
								   p_pool text[],
								   p_first bigint[],
								   p_last bigint[])
RETURNS integer
LANGUAGE C
VOLATILE
AS 'MODULE_PATHNAME', 'snowid_registry_forward';

REVOKE ALL ON FUNCTION snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[]) IS
'registry, internal: records the ranges the live holder of a node (its login role, start and secret) holds that the registry does not know (a grant lost in a failover), so that they are never granted again; returns the number recorded';

-- A grant to a member's worker, in the order of the contract: an unknown
-- pool, a caller without the live lease of its node, the member's held
-- ranges recorded, a repeated request, the facts only (want 0), then a new
-- range: the lowest values never granted, want of them while at least four
-- times as many are left, near the end a quarter of what is left (at least
-- 64) so that several members share the end and all of it is used.
CREATE FUNCTION snowid_pool_grant_serve(p_pool text,
								  p_node_id integer,
								  p_system_identifier numeric,
								  p_start_id text,
								  p_secret text,
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
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
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
	v_share double precision;
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
	IF NOT @extschema@.snowid_registry_holds(p_node_id, p_system_identifier,
											 p_start_id, p_secret) THEN
		result := 'refused';
		-- (a live lease that snowid_registry_holds refused is another's)
		detail := CASE
			WHEN v_node.node_id IS NULL
				THEN format('node %s has never been claimed', p_node_id)
			WHEN v_node.released_at IS NOT NULL
				THEN format('the lease of node %s was released', p_node_id)
			WHEN v_node.lease_until <= v_now
				THEN format('the lease of node %s has run out', p_node_id)
			ELSE format('node %s is held by another start (%s)', p_node_id,
						(SELECT h.holder FROM @extschema@.snowid_registry_holder_shown(p_node_id) h))
		END || '; only the holder of a live node lease is granted values';
		RETURN NEXT;
		RETURN;
	END IF;
	SELECT v.holder INTO v_holder
	  FROM @extschema@.snowid_registry_nodes v WHERE v.node_id = p_node_id;

	-- 3. The ranges the member holds of this pool.
	IF cardinality(p_held_first) > 0 THEN
		PERFORM @extschema@.snowid_pool_report(p_node_id, p_system_identifier,
											   p_start_id, p_secret,
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

	IF result IS NULL AND p_want > 0 AND
	   @extschema@.snowid_registry_recovering() IS NOT NULL THEN
		-- 5. A registry that may have forgotten grants no new range until
		-- every holder has had time to report the ranges it holds.
		v_state := 'recovering';
	ELSIF result IS NULL AND p_want > 0 THEN
		-- 6. and 7. A new range.  In a subtransaction: the same request
		-- granted at the same moment by another call (a retry while the
		-- first is still running) undoes this one and returns that one.
		BEGIN
			IF v_pool.upstream THEN
				-- (the range row's key share on the pool row waits for
				-- no member's open transaction either)
				PERFORM @extschema@.snowid_pool_lock(p_pool);
				SELECT t.first_value, t.last_value, t.state
				  INTO v_first, v_last, v_state
				  FROM @extschema@.snowid_pool_take(p_pool, p_want) t;
			ELSIF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r
						WHERE r.rolname = session_user) AND
				  (SELECT count(*) FROM @extschema@.snowid_pool_range r
					WHERE r.pool = p_pool
					  AND (NOT r.reported OR r.request LIKE 'reported+:%')
					  AND r.holder_role = session_user
					  AND r.granted_at > v_now - interval '1 hour') >=
				  (SELECT coalesce(max(s.max_grants_per_hour), 60)
					 FROM @extschema@.snowid_registry_settings s) THEN
				-- a role's grants of a pool in an hour are limited (but a
				-- superuser's): no loop of requests drains a pool
				v_state := 'limited';
			ELSE
				SELECT s.max_grant_share INTO v_share
				  FROM @extschema@.snowid_registry_settings s;
				v_share := coalesce(v_share, 0.01);
				PERFORM @extschema@.snowid_pool_lock(p_pool);
				LOOP
					SELECT p.next_value INTO v_next
					  FROM @extschema@.snowid_pool p WHERE p.name = p_pool;
					v_left := coalesce(v_pool.maxvalue::numeric - v_next + 1, 0);
					IF v_left = 0 THEN
						v_state := 'empty';
						EXIT;
					END IF;
					-- at most max_grant_share of what is left (at least 1,024)
					v_n := least(p_want, greatest(ceil(v_left * v_share::numeric), 1024));
					IF v_left < 4 * v_n::numeric THEN
						v_n := least(v_n, greatest(ceil(v_left / 4), least(v_left, 64)));
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
					 last_value, granted_at, returned_from, reported, start_id,
					 holder_role)
				VALUES (p_pool, p_node_id, v_holder, p_system_identifier, p_request,
						v_first, v_last, v_now, NULL, false, p_start_id, session_user)
				RETURNING r.* INTO v_range;
				result := 'granted';
			END IF;
		EXCEPTION WHEN lock_not_available THEN
			-- a transaction still open wrote the pool row: never waited for
			v_state := 'busy';
		WHEN unique_violation THEN
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
		result := CASE WHEN v_state IN ('wait', 'busy', 'limited', 'empty', 'unknown')
					   THEN v_state
					   WHEN v_state = 'recovering' THEN 'wait' END;
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
			WHEN 'recovering' THEN coalesce(@extschema@.snowid_registry_recovering(),
											'the registry may have forgotten its leases')
			WHEN 'busy' THEN format('a transaction that is still open wrote pool "%s"; ask again',
									p_pool)
			WHEN 'limited' THEN format('this login role was granted %s ranges of pool "%s" in the last hour, the most the registry grants (snowid_registry_settings.max_grants_per_hour)',
									   (SELECT coalesce(max(s.max_grants_per_hour), 60)
										  FROM @extschema@.snowid_registry_settings s),
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

REVOKE ALL ON FUNCTION snowid_pool_grant_serve(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_grant_serve(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]) IS
'registry, internal: what snowid_pool_grant does, applied by the registry''s server process in a transaction of its own, session_user being the member''s role; no member may call it';

-- What a member calls: the call goes to the registry's server process
-- (registry_server.c), which applies snowid_pool_grant_serve.
CREATE FUNCTION snowid_pool_grant(p_pool text,
								  p_node_id integer,
								  p_system_identifier numeric,
								  p_start_id text,
								  p_secret text,
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
LANGUAGE C
VOLATILE
ROWS 1
AS 'MODULE_PATHNAME', 'snowid_registry_forward';

REVOKE ALL ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]) IS
'registry, internal: grants the live holder of a node (its login role, start and secret; called by its background worker) the next range of a pool, at most max_grant_share of what is left, or the same one again for a repeated request; granted, again, info, empty, wait, busy, refused or unknown';

-- A member's clean shutdown gives back the unused tail [unused_from,
-- last_value] of the range holding p_first_value, if no grant came after it; a tail given back
-- whole makes way for the next grant from the same first value.
CREATE FUNCTION snowid_pool_return_serve(p_pool text,
								   p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_secret text,
								   p_first_value bigint,
								   p_unused_from bigint)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
	v_range @extschema@.snowid_pool_range;
	v_pool @extschema@.snowid_pool;
	v_end bigint;
	v_done boolean;
BEGIN
	-- Only the start that holds the node gives back: an old primary that
	-- a promoted standby (same system identifier, the same ranges from the
	-- WAL) took the node from must not free values the standby goes on
	-- handing out; and nothing is locked for anyone else.
	IF NOT @extschema@.snowid_registry_holds(p_node_id, p_system_identifier,
											 p_start_id, p_secret) THEN
		RETURN 'kept';
	END IF;
	-- the range holding p_first_value: the member may name its range by
	-- any value in it (it knows where its unused tail begins; a tail it
	-- kept at an earlier shutdown is all it still holds of a range)
	SELECT r.* INTO v_range
	  FROM @extschema@.snowid_pool_range r
	 WHERE r.pool = p_pool AND r.first_value <= p_first_value
	   AND r.last_value >= p_first_value
	 ORDER BY r.granted_at DESC, r.first_value DESC
	 LIMIT 1;
	IF NOT FOUND THEN
		RETURN 'unknown';
	END IF;
	-- Given back only by the start it was granted to (an earlier start's
	-- ranges are kept by the next start, never returned: a takeover cannot
	-- free values its predecessor issued), never a range recorded from a
	-- report, and never values another range holds too.
	IF v_range.node_id IS DISTINCT FROM p_node_id OR
	   v_range.system_identifier IS DISTINCT FROM p_system_identifier OR
	   v_range.reported OR
	   (v_range.start_id IS NOT NULL AND v_range.start_id <> p_start_id) OR
	   EXISTS (SELECT FROM @extschema@.snowid_pool_range o
				WHERE o.pool = p_pool AND o.first_value <> v_range.first_value
				  AND o.first_value <= v_range.last_value
				  AND p_unused_from <= coalesce(o.returned_from - 1, o.last_value)) THEN
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

	BEGIN
		PERFORM FROM @extschema@.snowid_pool_range r
		  WHERE r.pool = p_pool AND r.first_value = v_range.first_value
		  FOR UPDATE NOWAIT;
		PERFORM @extschema@.snowid_pool_lock(p_pool);
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
	EXCEPTION WHEN lock_not_available THEN
		-- a transaction still open holds the range or the pool: keep it
		v_done := false;
	END;
	IF NOT v_done THEN
		RETURN 'kept';
	END IF;
	UPDATE @extschema@.snowid_pool_range r SET returned_from = p_unused_from
	 WHERE r.pool = p_pool AND r.first_value = v_range.first_value;
	RETURN 'returned';
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_return_serve(text, integer, numeric, text, text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_return_serve(text, integer, numeric, text, text, bigint, bigint) IS
'registry, internal: what snowid_pool_return does, applied by the registry''s server process in a transaction of its own, session_user being the member''s role; no member may call it';

-- What a member calls: the call goes to the registry's server process
-- (registry_server.c), which applies snowid_pool_return_serve.
CREATE FUNCTION snowid_pool_return(p_pool text,
								   p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_secret text,
								   p_first_value bigint,
								   p_unused_from bigint)
RETURNS text
LANGUAGE C
VOLATILE
AS 'MODULE_PATHNAME', 'snowid_registry_forward';

REVOKE ALL ON FUNCTION snowid_pool_return(text, integer, numeric, text, text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_return(text, integer, numeric, text, text, bigint, bigint) IS
'registry, internal: takes back the unused tail of a range of the live holder of its node (its login role, start and secret) at its clean shutdown: returned, kept (a later grant came after it, or the caller does not hold the node) or unknown';

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

-- A member's call on the registry as one request (2.1 on): a JSON object
-- with the protocol version, the operation (claim, reassert, release,
-- pool_grant, pool_report, pool_return) and its fields by name (the
-- parameters of the positional function, without "p_"), each checked
-- (registry_request.c), then the positional call as the caller.  Members
-- need EXECUTE on that function as before: the request adds no right, so
-- it is left to PUBLIC and a registry updated to 2.1 needs no new GRANT.
CREATE FUNCTION snowid_registry_request(request jsonb)
RETURNS jsonb
LANGUAGE C
VOLATILE
AS 'MODULE_PATHNAME', 'snowid_registry_request';

COMMENT ON FUNCTION snowid_registry_request(jsonb) IS
'registry: a member''s call as one typed request, {"version": 1, "op": ..., fields by name}; answers {"version": 1, "rows": [...]} (members of 2.1 on)';
