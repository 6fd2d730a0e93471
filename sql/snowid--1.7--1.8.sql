/* snowid--1.7--1.8.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.8'" to load this file. \quit

-- 1.8: no caller, copy or forgetful registry can make a duplicate or lock
-- others out (issue 29).  Each function this version changes is replaced
-- whole below; nothing else moves.

-- pools (findings 2 and 7): a report moves a pool at most as far as one
-- grant to the reporter could have; a member's session that holds a pool
-- row past 1 s is ended by the next caller that needs it.

CREATE FUNCTION snowid_registry_unblock(p_tables regclass[])
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_until timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) '3 s'::pg_catalog.interval;
	v_b record;
	v_wait boolean;
	v_held boolean;
BEGIN
	LOOP
		v_wait := false;
		v_held := false;
		FOR v_b IN
			SELECT DISTINCT l.pid, a.xact_start, coalesce(r.rolsuper, true) AS super
			  FROM pg_catalog.pg_locks l
			  JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
			  LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.usesysid
			 WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.granted
			   AND l.mode OPERATOR(pg_catalog.=) ANY ('{RowShareLock,RowExclusiveLock}'::pg_catalog.text[])
			   AND l.database OPERATOR(pg_catalog.=)
				   (SELECT d.oid FROM pg_catalog.pg_database d
					 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
			   AND l.relation OPERATOR(pg_catalog.=) ANY (p_tables::pg_catalog.oid[])
			   AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
		LOOP
			IF v_b.super THEN
				v_held := true;
			ELSIF v_b.xact_start IS NULL THEN
				CONTINUE;		-- its transaction ended meanwhile
			ELSIF v_b.xact_start OPERATOR(pg_catalog.>)
				  (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) '1 s'::pg_catalog.interval) THEN
				v_wait := true;	-- a call still running
			ELSE
				BEGIN
					IF NOT pg_catalog.pg_terminate_backend(v_b.pid, 1000) THEN
						v_held := true;
					END IF;
				EXCEPTION WHEN insufficient_privilege THEN
					-- (the extension's owner is not a superuser)
					v_held := true;
				END;
			END IF;
		END LOOP;
		IF v_held OR (v_wait AND pg_catalog.clock_timestamp() OPERATOR(pg_catalog.>) v_until) THEN
			RETURN false;
		ELSIF NOT v_wait THEN
			RETURN true;
		END IF;
		PERFORM pg_catalog.pg_sleep(0.01);
	END LOOP;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_unblock(regclass[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_unblock(regclass[]) IS
'registry, internal: waits for, then terminates, sessions that are not a superuser''s and have held a row lock on the tables for more than 1 s; true when none is left';

-- The pool's row locked for this transaction (NOWAIT, then once more after
-- snowid_registry_unblock); lock_not_available if it stays held.
CREATE FUNCTION snowid_pool_lock(p_pool text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	FOR v_try IN 1..2 LOOP
		BEGIN
			PERFORM FROM @extschema@.snowid_pool p WHERE p.name = p_pool
			  FOR UPDATE NOWAIT;
			RETURN;
		EXCEPTION WHEN lock_not_available THEN
			IF v_try = 2 OR NOT @extschema@.snowid_registry_unblock(
					ARRAY[pg_catalog.format('%I.snowid_pool', '@extschema@')::regclass,
						  pg_catalog.format('%I.snowid_pool_range', '@extschema@')::regclass]) THEN
				RAISE;
			END IF;
		END;
	END LOOP;
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_lock(text) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_lock(text) IS
'registry, internal: locks a pool''s row for a grant, report or return, ending a member''s session that has held it for more than 1 s';

CREATE OR REPLACE FUNCTION snowid_pool_report(p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_secret text,
								   p_pool text[],
								   p_first bigint[],
								   p_last bigint[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
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

	-- only the live holder of the node (its login role and start's
	-- secret) reports for it
	IF NOT @extschema@.snowid_registry_holds(p_node_id, p_system_identifier,
											 p_start_id, p_secret) THEN
		RETURN 0;
	END IF;
	SELECT v.holder INTO v_holder
	  FROM @extschema@.snowid_registry_nodes v WHERE v.node_id = p_node_id;
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
		CONTINUE WHEN EXISTS (
			SELECT FROM @extschema@.snowid_pool_range r
			 WHERE r.pool = v_h.pool AND r.first_value <= v_h.hi
			   AND v_h.lo <= r.last_value);
		v_request := NULL;
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
			-- finds the pool row locked (a pool row held by another
			-- member's transaction for more than 1 s: that session ends)
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
					v_bound := v_next::numeric + v_n - 1;
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
							  DETAIL = format('The pool has granted the values below %s, and one grant from there ends at %s at the most (snowid_registry_settings.max_grant_share); nothing of this report is recorded.',
											  v_next, v_bound),
							  HINT = 'A member reports only ranges it was granted.  A registry that lost more of a pool than one grant needs a superuser to set the pool''s next_value above every range still held.';
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
		INSERT INTO @extschema@.snowid_pool_range AS r
			(pool, node_id, holder, system_identifier, request, first_value,
			 last_value, granted_at, returned_from, reported, start_id, holder_role)
		VALUES (v_h.pool, p_node_id, v_holder, p_system_identifier,
				coalesce(v_request, 'reported:' || v_h.lo), v_h.lo, v_h.hi, v_now, NULL, true,
				p_start_id, pg_catalog.session_user())
		ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_rows = ROW_COUNT;
		v_count := v_count + v_rows;
	END LOOP;
	RETURN v_count;
END
$$;

CREATE OR REPLACE FUNCTION snowid_pool_grant(p_pool text,
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
SECURITY DEFINER
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
						(SELECT v.holder FROM @extschema@.snowid_registry_nodes v
						  WHERE v.node_id = p_node_id))
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

	IF result IS NULL AND p_want > 0 THEN
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
					   THEN v_state END;
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

CREATE OR REPLACE FUNCTION snowid_pool_return(p_pool text,
								   p_node_id integer,
								   p_system_identifier numeric,
								   p_start_id text,
								   p_secret text,
								   p_first_value bigint,
								   p_unused_from bigint)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
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

-- ---- finding 5 (issue 29): snowid_convert_column with shards > 1 needs
-- an explicit start, the same on every shard, above the values of all:
-- each server sees only its own values, and starts above them alone made
-- overlapping stripes. ----
CREATE OR REPLACE FUNCTION snowid_convert_column(tab regclass,
									  col name,
									  drop_sequence boolean DEFAULT true,
									  ticket text DEFAULT NULL,
									  shard integer DEFAULT 0,
									  shards integer DEFAULT 1,
									  start bigint DEFAULT NULL,
									  block integer DEFAULT 1000)
RETURNS text
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
-- No row hidden from the checks: a policy that applies to the caller makes
-- them fail instead of filtering the values they compare.
SET row_security = off
AS $$
DECLARE
	v_rel record;
	v_att record;
	v_kind text;
	v_def text;				-- the column's default now, NULL if none
	v_def_oid oid;
	v_seq regclass;			-- the sequence the column takes its values from
	v_owned boolean := false;	-- v_seq is the column's identity or is owned by it
	v_seq_name text;
	v_want text;			-- the default the column gets
	v_parts text[];
	v_ticket_name text;		-- the ticket sequence, schema-qualified and quoted
	v_ticket regclass;
	v_top numeric;			-- the largest value the column or its sequence holds
	v_next bigint;
	v_first numeric;
	v_max numeric;
	v_grantee oid;
	v_citus boolean := false;
BEGIN
	IF tab IS NULL OR col IS NULL OR drop_sequence IS NULL OR shard IS NULL
	   OR shards IS NULL OR block IS NULL THEN
		RAISE EXCEPTION 'snowid_convert_column needs a table, a column, drop_sequence, shard, shards and block'
			USING ERRCODE = 'null_value_not_allowed',
				  DETAIL = 'Only ticket and start may be NULL.';
	END IF;

	SELECT c.relkind, c.relowner, c.relispartition, n.nspname
	  INTO v_rel
	  FROM pg_catalog.pg_class c
	  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
	 WHERE c.oid OPERATOR(pg_catalog.=) tab::pg_catalog.oid;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'relation with OID % does not exist', tab::pg_catalog.oid
			USING ERRCODE = 'undefined_table';
	END IF;
	IF v_rel.relkind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '% is not a table', tab
			USING ERRCODE = 'wrong_object_type',
				  DETAIL = pg_catalog.format('It is a %s; only the column of a table can be converted.',
											 CASE v_rel.relkind
												WHEN 'v' THEN 'view'
												WHEN 'm' THEN 'materialized view'
												WHEN 'f' THEN 'foreign table'
												WHEN 'S' THEN 'sequence'
												WHEN 'i' THEN 'index'
												WHEN 'I' THEN 'partitioned index'
												WHEN 'c' THEN 'composite type'
												ELSE 'relation of kind ' OPERATOR(pg_catalog.||) v_rel.relkind::pg_catalog.text
											 END);
	END IF;
	-- As ALTER TABLE checks it, before the lock: a role that may not alter
	-- the table does not get to keep others from it.
	IF NOT pg_catalog.pg_has_role(pg_catalog.current_user(), v_rel.relowner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tab
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'Converting a column alters its table, which only the table''s owner (or a member of the owning role) may do.';
	END IF;

	-- Every insert waits from here on, and reads the new default when it
	-- gets the table; every check below sees the table as it will be
	-- converted.
	EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tab);

	SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated
	  INTO v_att
	  FROM pg_catalog.pg_attribute a
	 WHERE a.attrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND a.attname OPERATOR(pg_catalog.=) col
	   AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of relation % does not exist', col, tab
			USING ERRCODE = 'undefined_column';
	END IF;
	IF v_att.attnum OPERATOR(pg_catalog.<=) 0 THEN
		RAISE EXCEPTION 'cannot convert system column "%"', col
			USING ERRCODE = 'feature_not_supported';
	END IF;
	IF v_att.attgenerated OPERATOR(pg_catalog.<>) '' THEN
		RAISE EXCEPTION 'column "%" of table % is a generated column', col, tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Its values are computed from other columns; they cannot come from snowid.';
	END IF;

	-- Partitions and inheritance: each table of a hierarchy has a default of
	-- its own, and rows inserted through a parent take the parent's.
	IF v_rel.relkind OPERATOR(pg_catalog.=) 'p' AND EXISTS (
		SELECT FROM pg_catalog.pg_partitioned_table p
		 WHERE p.partrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
		   AND v_att.attnum OPERATOR(pg_catalog.=) ANY (p.partattrs::pg_catalog.int2[])) THEN
		RAISE EXCEPTION 'column "%" of table % is its partition key', col, tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'New values would decide which partition a row goes to, and the existing partitions are bounded by the old ones.',
				  HINT = 'Give the table a key that snowid may fill besides its partition key, or create a new partitioned table bounded by snowid ranges (snowid_from_timestamp) and move the rows.';
	END IF;
	IF v_rel.relkind OPERATOR(pg_catalog.=) 'p' OR EXISTS (
		SELECT FROM pg_catalog.pg_inherits i
		 WHERE i.inhrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			OR i.inhparent OPERATOR(pg_catalog.=) tab::pg_catalog.oid) THEN
		RAISE EXCEPTION 'table % is part of a partitioned table or an inheritance hierarchy', tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Each table of a hierarchy has a default of its own, and rows inserted through a parent take the parent''s, so one column cannot be converted alone.',
				  HINT = 'Set the defaults of the hierarchy by hand (ALTER TABLE ... ALTER COLUMN ... SET DEFAULT), after checking that the unique indexes cover every table.';
	END IF;

	-- Citus copies a default to the shards and workers, and a distributed
	-- table's unique index includes its distribution column: convert the
	-- column before the table is distributed.
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
		EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
								 WHERE p.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1)'
		   INTO v_citus USING tab::pg_catalog.oid;
	END IF;
	IF v_citus THEN
		RAISE EXCEPTION 'table % is a Citus table', tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Its default is copied to its shards on the workers, where the check of the existing values and the change of the default would not run under one lock.',
				  HINT = 'Convert the column before create_distributed_table or create_reference_table, then distribute the table.';
	END IF;

	IF ticket IS NULL AND v_att.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
		RAISE EXCEPTION 'column "%" of table % is of type %, not bigint', col, tab,
			v_att.atttypid::pg_catalog.regtype
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = 'snowid_next() returns IDs of 63 bits, which only a bigint column can hold.',
				  HINT = CASE WHEN v_att.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int4'::pg_catalog.regtype
						 THEN 'Pass ticket => ''name'' to give it a ticket sequence of type integer, or change its type to bigint first.'
						 ELSE 'Change its type to bigint first (ALTER TABLE ... ALTER COLUMN ... TYPE bigint).' END;
	END IF;
	IF ticket IS NOT NULL AND v_att.atttypid NOT IN ('pg_catalog.int4'::pg_catalog.regtype,
												   'pg_catalog.int8'::pg_catalog.regtype) THEN
		RAISE EXCEPTION 'column "%" of table % is of type %, not integer or bigint', col, tab,
			v_att.atttypid::pg_catalog.regtype
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = 'A ticket sequence issues values of type integer or bigint.',
				  HINT = 'Change its type to integer or bigint first (ALTER TABLE ... ALTER COLUMN ... TYPE integer).';
	END IF;

	IF NOT EXISTS (
		SELECT FROM pg_catalog.pg_index i
		 WHERE i.indrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
		   AND i.indisunique AND i.indisvalid
		   AND i.indnkeyatts OPERATOR(pg_catalog.=) 1
		   AND i.indkey[0] OPERATOR(pg_catalog.=) v_att.attnum
		   AND i.indpred IS NULL) THEN
		RAISE EXCEPTION 'column "%" of table % has no unique index', col, tab
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Only a primary key or a unique constraint on the column alone refuses a value that a row already holds.',
				  HINT = pg_catalog.format('Add one first: ALTER TABLE %s ADD PRIMARY KEY (%I).', tab, col);
	END IF;

	-- A column that refers to another table takes its values from there:
	-- new keys of this server would name rows that do not exist.
	IF EXISTS (
		SELECT FROM pg_catalog.pg_constraint c
		 WHERE c.conrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
		   AND c.contype OPERATOR(pg_catalog.=) 'f'
		   AND v_att.attnum OPERATOR(pg_catalog.=) ANY (c.conkey)) THEN
		RAISE EXCEPTION 'column "%" of table % refers to another table', col, tab
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'A foreign key on the column takes its values from the table it references; a generated key would name no row there.',
				  HINT = 'Convert the key of the referenced table instead.';
	END IF;

	-- Where the values come from now.
	IF ticket IS NOT NULL THEN
		v_parts := pg_catalog.parse_ident(ticket);
		IF pg_catalog.cardinality(v_parts) OPERATOR(pg_catalog.=) 1 THEN
			v_ticket_name := pg_catalog.format('%I.%I', v_rel.nspname, v_parts[1]);
		ELSIF pg_catalog.cardinality(v_parts) OPERATOR(pg_catalog.=) 2 THEN
			v_ticket_name := pg_catalog.format('%I.%I', v_parts[1], v_parts[2]);
		ELSE
			RAISE EXCEPTION 'invalid ticket sequence name "%"', ticket
				USING ERRCODE = 'invalid_name',
					  DETAIL = 'A ticket sequence is named by a name or a schema and a name.';
		END IF;
		v_ticket := pg_catalog.to_regclass(v_ticket_name);
		IF v_ticket IS NOT NULL THEN
			v_want := pg_catalog.format('%I.snowid_ticket_next(%L::regclass)', '@extschema@', v_ticket);
		END IF;
	ELSE
		v_want := pg_catalog.format('%I.snowid_next()', '@extschema@');
	END IF;

	SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid), d.oid
	  INTO v_def, v_def_oid
	  FROM pg_catalog.pg_attrdef d
	 WHERE d.adrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND d.adnum OPERATOR(pg_catalog.=) v_att.attnum;

	-- The identity's sequence, or the one a serial column owns.
	SELECT s.oid::pg_catalog.regclass
	  INTO v_seq
	  FROM pg_catalog.pg_depend k
	  JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) k.objid
	 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND k.refobjid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND k.refobjsubid OPERATOR(pg_catalog.=) v_att.attnum
	   AND k.deptype IN ('a', 'i')
	   AND s.relkind OPERATOR(pg_catalog.=) 'S'
	 LIMIT 1;
	v_owned := v_seq IS NOT NULL;

	IF v_att.attidentity OPERATOR(pg_catalog.<>) '' THEN
		v_kind := 'identity';
	ELSIF v_want IS NOT NULL AND v_def OPERATOR(pg_catalog.=) v_want THEN
		IF v_owned THEN
			RAISE NOTICE 'column "%" of table % already takes its values from %', col, tab, v_want
				USING DETAIL = pg_catalog.format('Nothing was changed; the column still owns sequence %s, which it no longer takes values from.', v_seq),
					  HINT = pg_catalog.format('DROP SEQUENCE %s drops it.', v_seq);
		ELSE
			RAISE NOTICE 'column "%" of table % already takes its values from %', col, tab, v_want
				USING DETAIL = 'Nothing was changed.';
		END IF;
		RETURN v_def;
	ELSIF v_def IS NULL THEN
		v_kind := 'none';
	ELSE
		-- A default is converted only if it is nextval() of a sequence,
		-- written as serial writes it: nextval('name'::regclass).
		SELECT s.oid::pg_catalog.regclass
		  INTO v_seq
		  FROM pg_catalog.pg_depend k
		  JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) k.refobjid
		 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
		   AND k.objid OPERATOR(pg_catalog.=) v_def_oid
		   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND s.relkind OPERATOR(pg_catalog.=) 'S';
		IF NOT FOUND
		   OR v_def OPERATOR(pg_catalog.<>) pg_catalog.format('nextval(%L::regclass)', v_seq) THEN
			RAISE EXCEPTION 'column "%" of table % has a default that is not a sequence''s nextval()', col, tab
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = pg_catalog.format('Its default is %s.', v_def),
					  HINT = 'Only a column of type serial, bigserial or identity, or one without a default, can be converted.';
		END IF;
		v_kind := 'sequence';
		v_owned := EXISTS (
			SELECT FROM pg_catalog.pg_depend k
			 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND k.objid OPERATOR(pg_catalog.=) v_seq::pg_catalog.oid
			   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND k.refobjid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			   AND k.refobjsubid OPERATOR(pg_catalog.=) v_att.attnum
			   AND k.deptype OPERATOR(pg_catalog.=) 'a');
	END IF;

	-- The sequence goes with an identity (and with drop_sequence): nothing
	-- else may take its values from it.
	IF v_seq IS NOT NULL AND (v_kind OPERATOR(pg_catalog.=) 'identity' OR (drop_sequence AND v_owned))
	   AND EXISTS (
		SELECT FROM pg_catalog.pg_depend k
		 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
		   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND k.refobjid OPERATOR(pg_catalog.=) v_seq::pg_catalog.oid
		   AND k.objid IS DISTINCT FROM v_def_oid) THEN
		RAISE EXCEPTION 'sequence % of column "%" of table % is the default of other columns too', v_seq, col, tab
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = CASE WHEN v_kind OPERATOR(pg_catalog.=) 'identity'
						 THEN 'An identity''s sequence is dropped with the identity, and other columns still take their values from it.'
						 ELSE 'drop_sequence would drop it, and other columns still take their values from it.' END,
				  HINT = CASE WHEN v_kind OPERATOR(pg_catalog.=) 'identity'
						 THEN 'Give the other columns a sequence of their own first.'
						 ELSE 'Pass drop_sequence => false to keep it.' END;
	END IF;

	-- Above every value the column holds, and every value its sequence
	-- handed out (a row may have been deleted, or its value kept elsewhere).
	EXECUTE pg_catalog.format('SELECT pg_catalog.max(%I)::pg_catalog.numeric FROM %s', col, tab)
	   INTO v_top;
	IF v_seq IS NOT NULL THEN
		v_top := greatest(v_top, pg_catalog.pg_sequence_last_value(v_seq));
	END IF;

	IF ticket IS NULL THEN
		-- IDs of this server only go up: every one after this lies above it.
		v_next := @extschema@.snowid_next();
		IF v_top OPERATOR(pg_catalog.>=) v_next THEN
			RAISE EXCEPTION 'column "%" of table % holds values that this server''s IDs do not exceed', col, tab
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = pg_catalog.format('Its largest value (or its sequence''s last value) is %s; the next ID of this server is %s.', v_top, v_next),
					  HINT = 'Give it a ticket sequence that starts above its values (ticket => ''name'') instead.';
		END IF;
	ELSE
		IF v_ticket IS NOT NULL THEN
			RAISE EXCEPTION 'relation % already exists', v_ticket
				USING ERRCODE = 'duplicate_table',
					  DETAIL = pg_catalog.format('Column "%s" of table %s does not take its values from it.', col, tab),
					  HINT = 'Name a new ticket sequence: it is created to start above the column''s values.';
		END IF;
		v_max := CASE WHEN v_att.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int4'::pg_catalog.regtype
					  THEN 2147483647 ELSE 9223372036854775807 END;
		-- Each server sees only its own rows: a start above its own values
		-- would overlap the stripes of the others.
		IF start IS NULL AND shards OPERATOR(pg_catalog.>) 1 THEN
			RAISE EXCEPTION 'snowid_convert_column with shards => % needs start', shards
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('This server''s largest value (or its sequence''s last value) is %s; the other shards'' values are not known here, and a start above this server''s values alone would make stripes that overlap those of the others.', coalesce(v_top::pg_catalog.text, 'none')),
					  HINT = 'Take the largest value over all shards, pick a start above it, and pass the same start on every server.';
		END IF;
		IF start IS NOT NULL AND start OPERATOR(pg_catalog.<=) v_top THEN
			RAISE EXCEPTION 'start % is not above the values of column "%" of table %', start, col, tab
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('Its largest value (or its sequence''s last value) is %s.', v_top),
					  HINT = 'Leave start out to start just above them.';
		END IF;
		v_first := coalesce(start, greatest(coalesce(v_top, 0) OPERATOR(pg_catalog.+) 1, 1));
		IF start IS NULL AND v_first OPERATOR(pg_catalog.+) shard OPERATOR(pg_catalog.>) v_max THEN
			RAISE EXCEPTION 'column "%" of table % has no % values left above its values', col, tab,
				v_att.atttypid::pg_catalog.regtype
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = pg_catalog.format('Its largest value (or its sequence''s last value) is %s, the largest of its type.', v_top),
					  HINT = 'Change the column''s type to bigint first.';
		END IF;
		v_ticket := @extschema@.snowid_ticket_create(v_ticket_name, shard, shards, block,
													 v_first::bigint, v_att.atttypid::pg_catalog.regtype);
		-- The table's owner owns it, and whoever may insert into the table
		-- may take its values, as an identity column needs no privilege on
		-- its sequence.
		IF v_rel.relowner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r
												   WHERE r.rolname OPERATOR(pg_catalog.=) pg_catalog.current_user()) THEN
			EXECUTE pg_catalog.format('ALTER SEQUENCE %s OWNER TO %I', v_ticket,
									  pg_catalog.pg_get_userbyid(v_rel.relowner));
		END IF;
		FOR v_grantee IN
			SELECT a.grantee
			  FROM pg_catalog.pg_class c,
				   LATERAL pg_catalog.aclexplode(c.relacl) a
			 WHERE c.oid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			   AND a.privilege_type OPERATOR(pg_catalog.=) 'INSERT'
			UNION
			SELECT a.grantee
			  FROM pg_catalog.pg_attribute t,
				   LATERAL pg_catalog.aclexplode(t.attacl) a
			 WHERE t.attrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			   AND a.privilege_type OPERATOR(pg_catalog.=) 'INSERT'
		LOOP
			CONTINUE WHEN v_grantee OPERATOR(pg_catalog.=) v_rel.relowner;
			EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO %s', v_ticket,
									  CASE WHEN v_grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
									  ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grantee)) END);
		END LOOP;
		v_want := pg_catalog.format('%I.snowid_ticket_next(%L::regclass)', '@extschema@', v_ticket);
	END IF;

	IF v_kind OPERATOR(pg_catalog.=) 'identity' THEN
		-- Its sequence is part of the identity and goes with it.
		v_seq_name := v_seq::pg_catalog.text;
		EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tab, col);
		RAISE NOTICE 'sequence % of the identity is dropped with it', v_seq_name
			USING DETAIL = 'currval() and lastval() of that sequence now fail in every session instead of returning an old key; read new keys with INSERT ... RETURNING.';
	END IF;
	EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tab, col, v_want);
	IF v_kind OPERATOR(pg_catalog.<>) 'identity' AND v_seq IS NOT NULL THEN
		IF drop_sequence AND v_owned THEN
			EXECUTE pg_catalog.format('DROP SEQUENCE %s', v_seq);
		ELSE
			RAISE NOTICE 'sequence % is kept', v_seq
				USING DETAIL = CASE WHEN NOT v_owned
						THEN 'The column no longer takes its values from it; it belongs to no column of this table, so drop_sequence does not drop it. A session that called nextval() on it before still reads that old value from currval() and lastval().'
						ELSE 'The column no longer takes its values from it; it stays owned by the column and goes with the table. A session that called nextval() on it before still reads that old value from currval() and lastval().' END,
					  HINT = 'Read new keys with INSERT ... RETURNING, and drop the sequence (DROP SEQUENCE) once nothing reads it.';
		END IF;
	END IF;

	SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid)
	  INTO v_def
	  FROM pg_catalog.pg_attrdef d
	 WHERE d.adrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND d.adnum OPERATOR(pg_catalog.=) v_att.attnum;
	RETURN v_def;
END
$$;

COMMENT ON FUNCTION snowid_convert_column(regclass, name, boolean, text, integer, integer, bigint, integer) IS
'moves a serial, bigserial or identity column (or one without a default) with a unique index to DEFAULT snowid_next() (bigint), or to a new ticket sequence above its values (ticket => name), under an ACCESS EXCLUSIVE lock; drop_sequence (true unless given) drops a serial''s sequence; with shards > 1, start is required, the same on every server and above the values of all; a column already converted is left as it is';
