/* snowid--1.10--1.11.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.11'" to load this file. \quit

-- 1.11.  Each change has a section of its own below; a function it
-- changes is replaced whole there, nothing else moves.

-- ---- i38 replication guard: TRUNCATE refused, trigger modes kept ----
-- A replicated TRUNCATE of snowid's tables is refused (row triggers never
-- saw it), and ALTER TABLE ... ENABLE TRIGGER on any of them sets the guard
-- triggers back to their modes (the library's ProcessUtility hook, from
-- 1.11 for every table of snowid, not snowid_ticket alone); the update
-- sets snowid_local_only back to REPLICA where an ENABLE TRIGGER ALL left
-- it ORIGIN.

COMMENT ON FUNCTION snowid_local_only() IS
'trigger on snowid''s tables: skips, with a WARNING, a row change that arrives by logical replication, and refuses such a TRUNCATE (these tables hold the state of their own server)';

-- TRUNCATE (1.11), which a FOR ALL TABLES publication carries too: row
-- triggers do not fire for it, and a statement trigger cannot skip it.  On
-- every table of snowid, present and future (the tables of the extension,
-- not a list), a BEFORE TRUNCATE trigger refuses one that arrives by
-- replication (a logical replication worker, or a session replaying for a
-- replication origin) with an ERROR: the subscription stops there until
-- the DBA skips that transaction, which loses nothing of this server's
-- state.  Enabled ALWAYS, so that it fires in every session, whatever its
-- session_replication_role; a TRUNCATE of this server's own passes.
DO $guard$
DECLARE
	t regclass;
BEGIN
	FOR t IN
		SELECT c.oid::pg_catalog.regclass
		  FROM pg_catalog.pg_depend d
		  JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) d.refobjid
		  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
		 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		   AND d.deptype OPERATOR(pg_catalog.=) 'e'
		   AND x.extname OPERATOR(pg_catalog.=) 'snowid'
		   AND c.relkind OPERATOR(pg_catalog.=) 'r'
		 ORDER BY c.relname
	LOOP
		EXECUTE pg_catalog.format(
			'CREATE TRIGGER snowid_local_only_truncate BEFORE TRUNCATE ON %s '
			'FOR EACH STATEMENT EXECUTE FUNCTION %I.snowid_local_only()',
			t, '@extschema@');
		EXECUTE pg_catalog.format(
			'ALTER TABLE %s ENABLE ALWAYS TRIGGER snowid_local_only_truncate', t);
		EXECUTE pg_catalog.format(
			'COMMENT ON TRIGGER snowid_local_only_truncate ON %s IS %L', t,
			'refuses a TRUNCATE of this table that arrives by logical replication (snowid_local_only)');
		-- an ENABLE TRIGGER ALL under 1.9 or 1.10 left it ORIGIN here
		IF EXISTS (SELECT FROM pg_catalog.pg_trigger g
					WHERE g.tgrelid OPERATOR(pg_catalog.=) t
					  AND g.tgname OPERATOR(pg_catalog.=) 'snowid_local_only'
					  AND g.tgenabled OPERATOR(pg_catalog.=) 'O') THEN
			EXECUTE pg_catalog.format(
				'ALTER TABLE %s ENABLE REPLICA TRIGGER snowid_local_only', t);
		END IF;
	END LOOP;
END
$guard$;

-- ---- i38 a registry restored from a backup: members' reports recover its pools ----
--
-- A restore (or an asynchronous failover) loses many grants; during the
-- grace the members report the ranges they hold, and a report may now move
-- a pool as far as the grants forgotten since the restored state could
-- have reached (snowid_pool_lost_bound), not only one grant.
-- snowid_registry_recovering keeps its signature and answer; the time the
-- grace started comes from snowid_registry_recovery.

CREATE FUNCTION snowid_registry_recovery(OUT since timestamptz,
										  OUT detail text)
RETURNS SETOF record
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
ROWS 1
AS $$
SELECT t.since,
	   format('the registry %s %s s ago and grants new leases after %s s, when every holder has had time to re-assert its own',
			  CASE t.since
				  WHEN t.installed THEN 'had its snowid created (or restored)'
				  WHEN t.promoted THEN 'was promoted'
				  ELSE 'restarted (or was restored)'
			  END,
			  round(EXTRACT(epoch FROM t.now - t.since), 1),
			  trim_scale(EXTRACT(epoch FROM t.grace)))
  FROM (SELECT s.*,
			   greatest(CASE WHEN NOT s.fresh THEN s.started END,
						CASE WHEN s.promoted > s.installed THEN s.promoted END,
						CASE WHEN s.dropped OR s.restored THEN s.installed END) AS since
		  FROM (SELECT clock_timestamp() AS now,
					   x.started, x.promoted, x.installed,
					   x.dropped,
					   -- snowid created in this database after the server
					   -- started, never dropped: nothing from before the
					   -- start to forget
					   coalesce(x.installed > x.started AND NOT x.dropped, false) AS fresh,
					   -- rows older than this copy of snowid: restored
					   EXISTS (SELECT FROM @extschema@.snowid_registry_node n
								WHERE n.claimed_at < x.installed) AS restored,
					   coalesce((SELECT r.reassert_grace
								   FROM @extschema@.snowid_registry_settings r),
								interval '20 seconds') AS grace
				  FROM (SELECT pg_postmaster_start_time() AS started,
							   @extschema@.snowid_registry_dropped_at() IS NOT NULL AS dropped,
							   -- (the history file's time, in whole seconds:
							   -- its second's end, so the grace is never short)
							   (SELECT f.modification + interval '1 second'
								  FROM pg_stat_file('pg_wal/' ||
													"left"(pg_walfile_name(pg_current_wal_lsn()), 8) ||
													'.history', true) f
								 WHERE NOT pg_is_in_recovery()) AS promoted,
							   (SELECT max(i.installed_at)
								  FROM @extschema@.snowid_registry_installed i) AS installed) x) s) t
 WHERE t.since + t.grace > t.now
$$;

REVOKE ALL ON FUNCTION snowid_registry_recovery() FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_recovery() IS
'registry, internal: while the registry may have forgotten leases and ranges (its server started or was promoted, or snowid was created, less than reassert_grace ago), one row: since when, and why it grants nothing new yet; no row after';

-- (the 1.8 function, now on snowid_registry_recovery)
CREATE OR REPLACE FUNCTION snowid_registry_recovering()
RETURNS text
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT r.detail FROM @extschema@.snowid_registry_recovery() r
$$;


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
	v_one numeric;
	v_lost bigint;
	v_since timestamptz;
	v_since_read boolean := false;
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
