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
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
ROWS 1
AS $$
BEGIN
RETURN QUERY
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
					   -- (node rows, or pools: a dump taken before any
					   -- member claimed a node has none of the first)
					   (EXISTS (SELECT FROM @extschema@.snowid_registry_node n
								 WHERE n.claimed_at < x.installed) OR
						EXISTS (SELECT FROM @extschema@.snowid_pool p
								 WHERE p.created_at < x.installed)) AS restored,
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
 WHERE t.since + t.grace > t.now;
END
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

-- snowid_pool_report, which carries this change, is replaced whole in the
-- section "i39 every value a caller sends is checked" below (its one
-- version of 1.11).

-- ---- i38 the holder's plain claim carries its grant's floor again ----
--
-- The registry records a grant when it answers.  A member whose answer was
-- lost, or that refused it (a floor no holder can have reached), claimed
-- again as the node's holder, and that renewal came without a floor: the
-- member then issued without ever having raised its generator above the
-- previous holders' IDs (seen in TAP 058 under load: a member restarted
-- under a floor of 2^62 refused the takeover, then held the node a second
-- later).  A holder's claim that does not re-assert the lease now carries
-- the floor kept in the node's row (last_id, floor_until) and the
-- registry's own server's bound, as the grant did.

CREATE OR REPLACE FUNCTION snowid_registry_claim(p_node_id integer,
									  p_auto boolean,
									  p_max_node integer,
									  p_layout text,
									  p_cluster_name text,
									  p_host text,
									  p_port integer,
									  p_system_identifier numeric,
									  p_start_id text,
									  p_secret text,
									  p_predecessor text,
									  p_promoted boolean,
									  p_lease_ms bigint,
									  p_takeover_ms bigint,
									  p_max_lead_ms bigint,
									  p_last_id bigint)
RETURNS TABLE (result text,
			   node_id integer,
			   lease_ms bigint,
			   holder text,
			   detail text,
			   floor_id bigint,
			   floor_until timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
ROWS 1
AS $$
DECLARE
	v_now timestamptz := pg_catalog.clock_timestamp();
	v_role name := pg_catalog.session_user();
	v_hash text;
	v_set @extschema@.snowid_registry_settings;
	v_lease_ms bigint;
	v_takeover_ms bigint;
	v_margin_ms bigint;
	v_until timestamptz;
	v_target integer := p_node_id;
	v_exclude integer[] := '{}';
	v_row @extschema@.snowid_registry_node;
	v_xmin text;
	v_pair record;
	v_dec record;
	v_resend boolean;
	v_held integer;
	v_busy integer := 0;
	v_unblocked boolean := false;
	v_host record;
BEGIN
	PERFORM @extschema@.snowid_registry_no_prepare();
	PERFORM @extschema@.snowid_registry_claim_check(p_max_node, p_layout,
		p_start_id, p_secret, p_lease_ms, p_takeover_ms, p_max_lead_ms);
	v_hash := encode(sha256(convert_to(p_secret, 'UTF8')), 'hex');

	-- 1. The settings and the layout.
	v_set := @extschema@.snowid_registry_claim_settings(p_layout);
	v_lease_ms := least(p_lease_ms,
						(EXTRACT(epoch FROM v_set.max_lease) * 1000)::bigint);
	v_takeover_ms := greatest(p_takeover_ms,
							  (EXTRACT(epoch FROM v_set.takeover_delay) * 1000)::bigint);
	v_margin_ms := (EXTRACT(epoch FROM v_set.lead_margin) * 1000)::bigint;
	v_until := v_now + v_lease_ms * interval '1 ms';

	result := 'conflict';
	node_id := p_node_id;
	lease_ms := NULL;
	holder := NULL;
	detail := NULL;
	floor_id := NULL;
	floor_until := NULL;

	IF v_set.layout <> p_layout THEN
		detail := format('the registry''s layout is %s; this server''s is %s',
						 v_set.layout, p_layout);
	ELSIF v_lease_ms < p_max_lead_ms + v_margin_ms THEN
		-- 2. The lease must outlast what the holder may issue ahead.
		detail := format('a lease of %s s is shorter than this server''s snowid.max_lead of %s s plus the registry''s margin of %s s: lengthen snowid.lease (the registry grants at most %s s) or shorten snowid.max_lead',
						 trim_scale(v_lease_ms / 1000.0),
						 trim_scale(p_max_lead_ms / 1000.0),
						 trim_scale(v_margin_ms / 1000.0),
						 trim_scale(EXTRACT(epoch FROM v_set.max_lease)));
	ELSIF p_node_id < 0 OR p_node_id > p_max_node THEN
		-- 3. The node ID must exist in the layout.
		RAISE EXCEPTION 'node ID % is out of range', p_node_id
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The layout has node IDs 0 to %s.', p_max_node);
	ELSE
		-- the bound of the IDs it issued, as it reports it: possible
		PERFORM @extschema@.snowid_registry_check_report('last ID', p_last_id,
			v_set.layout, p_max_lead_ms, v_margin_ms);
		result := NULL;
	END IF;
	-- the registry's own server: its node is granted to no member
	v_host := @extschema@.snowid_registry_claim_host(v_set, v_now);

	WHILE result IS NULL LOOP
		-- 4. The target node, unless named.
		IF v_target IS NULL THEN
			v_target := @extschema@.snowid_registry_claim_target(p_start_id,
				v_role, v_hash, v_now, p_max_node, v_exclude, v_host.node_id);
			IF v_target IS NULL THEN
				result := 'conflict';
				IF cardinality(v_exclude) = 0 THEN
					node_id := NULL;
					detail := format('all %s node IDs are held', p_max_node::bigint + 1);
				END IF;
				-- else: nothing else is free, the conflict over the node named
				EXIT;
			END IF;
		END IF;

		-- 5. The row of the target node, as it stands (not locked: a
		-- conflict holds nothing), and the decision on it.
		SELECT n AS r, n.xmin::text AS x INTO v_pair
		  FROM @extschema@.snowid_registry_node n WHERE n.node_id = v_target;
		IF FOUND THEN
			v_row := v_pair.r;
			v_xmin := v_pair.x;
		ELSE
			v_row := NULL;
			v_xmin := NULL;
		END IF;
		v_dec := @extschema@.snowid_registry_claim_decide(v_row, v_target, v_now,
			v_role, v_hash, p_start_id, p_system_identifier, p_predecessor,
			p_promoted, v_takeover_ms, v_host.node_id);
		result := v_dec.result;
		node_id := v_target;
		lease_ms := CASE WHEN v_dec.result = 'ok' THEN v_lease_ms END;
		holder := v_dec.holder;
		detail := v_dec.detail;
		floor_id := v_dec.floor_id;
		floor_until := v_dec.floor_until;

		IF v_dec.result = 'ok' AND NOT v_dec.own AND NOT v_dec.successor AND
		   current_setting('snowid_registry.reasserting', true) IS NOT DISTINCT FROM
			   format('%s %s', v_target, p_start_id) AND
		   @extschema@.snowid_registry_recovering() IS NOT NULL THEN
			-- a holder re-asserting a lease the registry may have
			-- forgotten (snowid_registry_reassert): the registry takes its
			-- word, so the node comes with a floor above every ID any
			-- holder may have issued under it until now (its max_lead is
			-- added by the member); a role lying to take a node thus
			-- issues above its real holder's IDs, never among them
			floor_until := greatest(floor_until, v_now);
		ELSIF v_dec.result = 'ok' AND NOT v_dec.own AND NOT v_dec.successor AND
		   @extschema@.snowid_registry_recovering() IS NOT NULL THEN
			-- a registry that may have forgotten grants no new holder
			-- until every live one has had time to re-assert its lease
			-- (snowid_registry_reassert)
			result := 'conflict';
			node_id := coalesce(p_node_id, v_target);
			lease_ms := NULL;
			holder := NULL;
			floor_id := NULL;
			floor_until := NULL;
			detail := coalesce(@extschema@.snowid_registry_recovering(),
							   'the registry may have forgotten its leases');
			RETURN NEXT;
			RETURN;
		END IF;

		v_resend := v_dec.result = 'ok' AND v_dec.own AND
			current_setting('snowid_registry.reasserting', true) IS DISTINCT FROM
				format('%s %s', v_target, p_start_id);
		IF v_resend THEN
			-- the holder's start claims again without saying it holds the
			-- lease (not through snowid_registry_reassert): it may never
			-- have acted on the grant that made it the holder, whose
			-- answer was lost, or refused by the member (a floor no holder
			-- can have reached).  The answer carries that grant's floor
			-- again (the row keeps it: floor_until, and last_id, which
			-- covers the earlier holders' IDs and this start's reports),
			-- so that no answer lets a new holder issue below the floor it
			-- has not applied (1.11).  A holder that issues under the
			-- lease re-asserts it and gets no floor, as before.
			floor_id := v_row.last_id;
			floor_until := v_row.floor_until;
		END IF;

		IF result = 'ok' AND (NOT v_dec.own OR v_resend) AND
		   v_host.issued_below IS NOT NULL THEN
			-- a new holder (or the holder that may not have acted on its
			-- grant, above) also stays above every ID the registry's own
			-- server has issued, under whichever node
			floor_id := greatest(floor_id, v_host.issued_below);
		END IF;

		IF result = 'ok' AND NOT v_dec.own THEN
			-- 6. A new holder: within the role's share of the nodes.
			v_held := @extschema@.snowid_registry_claim_role_holds(v_role, v_now, v_target);
			IF v_held >= v_set.max_nodes_per_role THEN
				result := 'conflict';
				lease_ms := NULL;
				floor_id := NULL;
				floor_until := NULL;
				detail := format('login role %s already holds %s node IDs, the most this registry grants one role (snowid_registry_settings.max_nodes_per_role)',
								 v_role, v_held);
				EXIT;
			END IF;
		END IF;

		IF result = 'ok' THEN
			-- 7. Write the row.
			BEGIN
				PERFORM @extschema@.snowid_registry_claim_write(v_row, v_xmin,
					v_target, p_cluster_name, p_host, p_port, p_system_identifier,
					p_start_id, p_layout, v_now, v_until, p_last_id, v_role, v_hash,
					p_max_lead_ms, v_dec.own, v_dec.row_floor);
			EXCEPTION WHEN lock_not_available OR unique_violation THEN
				-- another transaction wrote the row and is still open, or
				-- did meanwhile: a node of this server's own is not given
				-- up for it, nor one named, nor more than a few assigned
				-- ones.  A transaction left open there (a member's claim
				-- of a node whose lease ran out, then no COMMIT) would keep
				-- that node's holder out for as long as it likes: its
				-- session is ended once the transaction is 1 s old
				-- (snowid_registry_wait_row), the claim waits for the row,
				-- ahead of any later locker, and reads it again, once;
				-- still held, an error (the member keeps its lease and
				-- asks again).
				v_busy := v_busy + 1;
				IF v_dec.own OR v_dec.successor OR p_auto IS NOT TRUE OR v_busy > 3 THEN
					IF NOT v_unblocked AND @extschema@.snowid_registry_wait_row(
							ARRAY[pg_catalog.format('%I.snowid_registry_node', '@extschema@')::regclass],
							pg_catalog.format('SELECT FROM %I.snowid_registry_node n WHERE n.node_id OPERATOR(pg_catalog.=) %s FOR UPDATE',
											  '@extschema@', v_target)) THEN
						-- (a row inserted by a transaction that has not
						-- ended yet is waited for by the insert, at most
						-- 2 s; lock_timeout as it was again on return)
						PERFORM pg_catalog.set_config('lock_timeout', '2s', true);
						v_unblocked := true;
						v_busy := v_busy - 1;
						result := NULL;
						CONTINUE;
					END IF;
					RAISE EXCEPTION 'node % is being written by another transaction', v_target
						USING ERRCODE = 'lock_not_available',
							  HINT = 'Claim again in a moment.';
				END IF;
				result := 'conflict';
				lease_ms := NULL;
				floor_id := NULL;
				floor_until := NULL;
				detail := format('node %s is being claimed by another transaction', v_target);
			END;
		END IF;

		IF result = 'conflict' THEN
			-- an assigned node moves to another free one, except for its
			-- own successor, which takes it back once the old start is silent
			IF p_auto IS TRUE AND cardinality(v_exclude) < 64 AND
			   v_dec.successor IS NOT TRUE THEN
				v_exclude := v_exclude || v_target;
				v_target := NULL;
				result := NULL;
				CONTINUE;
			END IF;
			EXIT;
		END IF;
	END LOOP;
	RETURN NEXT;
END
$$;

-- ---- i39 every value a caller sends is checked: layouts, identities, upstream reports ----
-- A claim's layout must be one snowid could have, written as members write
-- it (snowid_registry_layout_check, from snowid_registry_claim_check): the
-- first claim on a new registry no longer fixes any text as its layout.
-- The identity a claim keeps with a lease (cluster name, host, port,
-- system identifier, start) must be one a server could have
-- (snowid_registry_claim_write).  A member's report on an upstream pool is
-- bounded by this server's holdings as an ordinary pool's is by its
-- next_value (snowid_pool_reach, snowid_pool_report): it no longer empties
-- them.

CREATE FUNCTION snowid_registry_layout_check(p_layout text)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m text[];
	v_epoch timestamptz;
	v_why text;
BEGIN
	m := pg_catalog.regexp_match(p_layout,
		'^epoch ([0-9]{4,5}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6})\+00, tick ([1-9][0-9]{0,10})us, node_bits (0|[1-9][0-9]?), sequence_bits (0|[1-9][0-9]?), id_bits ([1-9][0-9]?)$');
	IF m IS NULL THEN
		v_why := 'It is not written as members write a layout: "epoch <UTC time to the microsecond>+00, tick <microseconds>us, node_bits <n>, sequence_bits <n>, id_bits <n>".';
	ELSIF m[3]::integer > 31 OR m[4]::integer > 31 THEN
		v_why := format('node_bits (%s) and sequence_bits (%s) must each be 0 to 31.', m[3], m[4]);
	ELSIF m[5]::integer < 32 OR m[5]::integer > 63 THEN
		v_why := format('id_bits (%s) must be 32 to 63.', m[5]);
	ELSIF m[3]::integer + m[4]::integer >= m[5]::integer THEN
		v_why := format('node_bits (%s) and sequence_bits (%s) leave no bit of id_bits (%s) for the timestamp.',
						m[3], m[4], m[5]);
	ELSIF m[2]::bigint % 1000 <> 0 OR m[2]::bigint > 86400000000 THEN
		v_why := format('The tick (%s us) must be a whole number of milliseconds from 1 ms to one day.', m[2]);
	ELSE
		BEGIN
			v_epoch := (m[1] || '+00')::timestamptz;
		EXCEPTION WHEN data_exception THEN
			v_epoch := NULL;
		END;
		IF v_epoch IS NULL OR
		   pg_catalog.to_char(v_epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') <> m[1] THEN
			v_why := format('The epoch (%s) is not a valid time written as members write it.', m[1]);
		ELSIF v_epoch > pg_catalog.clock_timestamp() + interval '1 hour' THEN
			v_why := format('The epoch (%s) is in the future.', m[1]);
		END IF;
	END IF;
	IF v_why IS NOT NULL THEN
		RAISE EXCEPTION 'invalid layout "%"',
			CASE WHEN pg_catalog.length(p_layout) > 120
				 THEN pg_catalog.left(p_layout, 120) || '...' ELSE p_layout END
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = v_why || ' Nothing was recorded.',
				  HINT = 'A member sends the layout of its snowid settings; check snowid.node_bits, snowid.sequence_bits, snowid.id_bits, snowid.tick and snowid.epoch there.';
	END IF;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_layout_check(text) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_layout_check(text) IS
'registry, internal: refuses (22023) a layout text no member could send: not written as snowid writes a layout, widths out of range, no timestamp bit, a tick that is not 1 ms to one day in whole milliseconds, an epoch that is no valid time or lies in the future';

CREATE OR REPLACE FUNCTION snowid_registry_claim_check(p_max_node integer,
											p_layout text,
											p_start_id text,
											p_secret text,
											p_lease_ms bigint,
											p_takeover_ms bigint,
											p_max_lead_ms bigint)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_bits integer;
BEGIN
	IF p_max_node IS NULL OR p_max_node < 0 THEN
		RAISE EXCEPTION 'invalid highest node ID: %', coalesce(p_max_node::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p_layout IS NULL OR p_start_id IS NULL THEN
		RAISE EXCEPTION 'a claim needs a layout and a start identity'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- a layout snowid could have (the first claim sets the registry's)
	PERFORM @extschema@.snowid_registry_layout_check(p_layout);
	IF p_secret IS NULL OR octet_length(p_secret) < 32 THEN
		RAISE EXCEPTION 'a claim needs the start''s secret of at least 32 characters'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'Every call on a lease presents the secret its start claimed it with.';
	END IF;
	IF p_lease_ms IS NULL OR p_lease_ms <= 0 OR
	   p_takeover_ms IS NULL OR p_takeover_ms < 0 OR
	   p_max_lead_ms IS NULL OR p_max_lead_ms < 0 OR p_max_lead_ms > 3600000 THEN
		RAISE EXCEPTION 'invalid lease of % ms, takeover time of % ms or max_lead of % ms',
			coalesce(p_lease_ms::text, 'NULL'), coalesce(p_takeover_ms::text, 'NULL'),
			coalesce(p_max_lead_ms::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The lease must be positive, the takeover time zero or more, max_lead 0 to 3600000 ms (the largest snowid.max_lead).';
	END IF;
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'a claim must run at the read committed isolation level'
			USING ERRCODE = 'invalid_transaction_state',
				  DETAIL = 'It decides on the leases as they stand now, not as a snapshot taken earlier saw them.';
	END IF;
	-- the node bits in a member's layout give the highest node ID
	v_bits := substring(p_layout FROM 'node_bits ([0-9]+)')::integer;
	IF v_bits IS NOT NULL AND (v_bits > 30 OR p_max_node <> (1 << v_bits) - 1) THEN
		RAISE EXCEPTION 'highest node ID % does not match the layout "%"', p_max_node, p_layout
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;

COMMENT ON FUNCTION snowid_registry_claim_check(integer, text, text, text, bigint, bigint, bigint) IS
'registry, internal: raises an error for arguments of snowid_registry_claim that no member sends (a layout or start missing, a layout snowid could not have, a short secret, a lease, takeover time or max_lead out of range (max_lead at most an hour, as snowid.max_lead), a highest node ID that is not the layout''s)';

CREATE OR REPLACE FUNCTION snowid_registry_claim_write(p_row snowid_registry_node,
											p_xmin text,
											p_target integer,
											p_cluster_name text,
											p_host text,
											p_port integer,
											p_system_identifier numeric,
											p_start_id text,
											p_layout text,
											p_now timestamptz,
											p_until timestamptz,
											p_last_id bigint,
											p_role name,
											p_hash text,
											p_max_lead_ms bigint,
											p_own boolean,
											p_floor timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- what a member sends of itself, kept with the lease: no more than a
	-- server has (cluster_name, a host name, a port, a system identifier,
	-- a start identity of 32 hex digits)
	IF octet_length(p_cluster_name) > 256 OR octet_length(p_host) > 256 OR
	   p_port NOT BETWEEN 1 AND 65535 OR
	   NOT (p_system_identifier >= 0 AND
			p_system_identifier < 18446744073709551616 AND
			p_system_identifier = trunc(p_system_identifier)) OR
	   octet_length(p_start_id) NOT BETWEEN 1 AND 64 THEN
		RAISE EXCEPTION 'invalid identity of a member''s start'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('A member sends its cluster_name and host name (at most 256 bytes each, %s and %s here), a port from 1 to 65535 (%s), a system identifier from 0 to 2^64 - 1 (%s) and a start identity of 1 to 64 bytes (%s); nothing was recorded.',
								  octet_length(p_cluster_name), octet_length(p_host),
								  p_port, p_system_identifier, octet_length(p_start_id)),
				  HINT = 'Claim as a member''s background worker does.';
	END IF;
	IF p_row.node_id IS NULL THEN
		INSERT INTO @extschema@.snowid_registry_node
			(node_id, cluster_name, host, port, system_identifier, start_id,
			 layout, claimed_at, last_seen, lease_until, released_at, last_id,
			 holder_role, secret_hash, max_lead_ms, floor_until)
		VALUES (p_target, p_cluster_name, p_host, p_port, p_system_identifier,
				p_start_id, p_layout, p_now, p_now, p_until, NULL, p_last_id,
				p_role, p_hash, p_max_lead_ms, NULL);
	ELSE
		PERFORM FROM @extschema@.snowid_registry_node n
		  WHERE n.node_id = p_target AND n.xmin::text = p_xmin
		  FOR UPDATE NOWAIT;
		IF NOT FOUND THEN
			RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
		END IF;
		UPDATE @extschema@.snowid_registry_node n
		   SET cluster_name = p_cluster_name, host = p_host, port = p_port,
			   system_identifier = p_system_identifier, start_id = p_start_id,
			   layout = p_layout,
			   claimed_at = CASE WHEN p_own THEN n.claimed_at ELSE p_now END,
			   last_seen = p_now, lease_until = p_until, released_at = NULL,
			   last_id = greatest(n.last_id, p_last_id),
			   holder_role = p_role, secret_hash = p_hash,
			   max_lead_ms = CASE WHEN p_own
								  THEN greatest(n.max_lead_ms, p_max_lead_ms)
								  ELSE p_max_lead_ms END,
			   floor_until = p_floor, registry_host = false
		 WHERE n.node_id = p_target;
	END IF;
END
$$;

COMMENT ON FUNCTION snowid_registry_claim_write(snowid_registry_node, text, integer, text, text, integer, numeric, text, text, timestamptz, timestamptz, bigint, name, text, bigint, boolean, timestamptz) IS
'registry, internal: writes the row of a node granted by a claim, without waiting and only as the claim read it, once the identity the member sent is one a server could have';

CREATE FUNCTION snowid_pool_reach(pool text,
								  OUT next_value bigint,
								  OUT take_last bigint,
								  OUT held_last bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_pool_reach_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_reach(text) IS
'where grants of pool from this server''s holdings reach: the next value one would hand out, the last one grant can reach, the last value held (NULL, NULL while none is in hand)';

REVOKE ALL ON FUNCTION snowid_pool_reach(text) FROM PUBLIC;

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

-- ---- i40: snowid_registry_retire, retiring a node whose holder is gone ----

-- A member gone for good without releasing its node (state 'expired' in
-- snowid_registry_nodes: a server lost, a clone thrown away) keeps
-- counting toward its role's max_nodes_per_role until a superuser retires
-- it, as a clean release would have: the lease ended when it ran out, and
-- the next holder stays above every ID it could have issued (last_id, and
-- its lease end plus its max_lead).  Refused, changing nothing, in this
-- order: a node never claimed (42704); any while the registry may have
-- forgotten leases (55000: a lease that looks run out may be re-asserted);
-- the registry's own server's node (55006); one whose lease has not run
-- out (55006: its holder may still issue).  A node already released is
-- returned as it is.
CREATE FUNCTION snowid_registry_retire(node_id integer)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_row @extschema@.snowid_registry_node;
	v_recovering text := @extschema@.snowid_registry_recovering();
BEGIN
	SELECT n.* INTO v_row FROM @extschema@.snowid_registry_node n
	 WHERE n.node_id = snowid_registry_retire.node_id
	   FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'node % was never claimed at this registry', node_id
			USING ERRCODE = 'undefined_object',
				  HINT = 'snowid_registry_nodes lists the nodes this registry knows.';
	END IF;
	IF v_row.released_at IS NOT NULL THEN
		RETURN v_row.released_at;
	END IF;
	IF v_recovering IS NOT NULL THEN
		RAISE EXCEPTION 'the registry may have forgotten leases, and retires no node now'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'The ' || substr(v_recovering, 5) || '.',
				  HINT = 'Retire it once the grace has passed, if it is still expired then.';
	END IF;
	IF v_row.registry_host THEN
		RAISE EXCEPTION 'node % is the registry''s own server''s', node_id
			USING ERRCODE = 'object_in_use',
				  DETAIL = 'The registry''s own server issues IDs under it; no member is granted it while it does, or for max_lease after.';
	END IF;
	IF v_row.lease_until >= pg_catalog.clock_timestamp() THEN
		RAISE EXCEPTION 'node % is held until %', node_id, v_row.lease_until
			USING ERRCODE = 'object_in_use',
				  DETAIL = pg_catalog.format('Its holder (%s:%s, last seen %s) may still issue IDs under it.',
											 v_row.host, v_row.port, v_row.last_seen),
				  HINT = 'Stop that server (a clean shutdown releases the node), or wait until its lease runs out.';
	END IF;
	UPDATE @extschema@.snowid_registry_node n
	   SET released_at = n.lease_until,
		   floor_until = greatest(n.floor_until,
								  n.lease_until + coalesce(n.max_lead_ms, 0) * interval '1 ms')
	 WHERE n.node_id = snowid_registry_retire.node_id;
	RETURN v_row.lease_until;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_retire(integer) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_retire(integer) IS
'registry: releases a node whose holder is gone for good (its lease ran out), as a clean release would have, keeping what its next holder must stay above; returns when its lease ended (superusers only)';

-- ---- i40 health: snowid_health() ----

-- Health (issue 40): can this server issue, and for how long?  One row per
-- thing that issues -- the generator, the node lease (with a registry),
-- each striped ticket sequence of this database, each pool this server
-- draws on -- with a status (critical, warning, ok), how long it goes on
-- issuing (NULL: no bound known) and why, the soonest problem first.
--
-- Thresholds hold for a healthy server: nothing here reads a pool's
-- time_left while the registry answers (it refills every pool at half use;
-- a just-started pool's rate is that of its first ticket block, and its
-- time_left reads seconds), and a standby, which issues nothing until it
-- is promoted, is ok.  Critical: the generator's layout ends within 30
-- days, a lease or a pool's values (registry unreachable) within an hour
-- (a time a person can act in; a lease shorter than that makes every
-- outage critical, as it should: the server stops within it), a ticket
-- has no value left, or something issues nothing now (issues_for 0).
-- Warning: the layout ends within a year, the registry does not answer, a
-- ticket has less than 1 % of its values left.
--
-- SECURITY DEFINER, for pg_monitor: it reads what pg_monitor may not --
-- the gate (snowid_registry_host(), internal), the tickets' positions (the
-- sequences' privileges) and the registry's detail (an unchecked server) --
-- and shows of them only the statuses, times and counts below, never a
-- holder, the registry's address or libpq's words.  Every snowid object is
-- named by its schema, and the search_path is fixed.  PARALLEL UNSAFE: it
-- calls snowid_registry_host(), which carries no parallel label.
CREATE FUNCTION snowid_health(OUT component text,
							  OUT name text,
							  OUT status text,
							  OUT issues_for interval,
							  OUT reason text)
RETURNS SETOF record
LANGUAGE plpgsql
VOLATILE
PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	v_now timestamptz := pg_catalog.clock_timestamp();
	v_host record;
	v_reg record;
	v_layout record;
	v_stats record;
	v_standby boolean := pg_catalog.pg_is_in_recovery();
	v_issuing boolean;			-- the gate is open: snowid_next() issues
	v_max_wait bigint;
	v_lease_left interval;		-- NULL: no lease end in sight (or none)
	v_refills boolean;			-- the registry answers: pools refill
	v_no_refill text;			-- why they do not
	g_status text;
	g_for interval;
	g_reason text;
	l_status text;
	l_for interval;
	l_reason text;
BEGIN
	SELECT * INTO v_host FROM @extschema@.snowid_registry_host();
	IF v_host.layout IS NULL THEN
		RETURN QUERY
		SELECT 'generator'::text, NULL::text, 'critical'::text,
			   '0'::interval,
			   'snowid is not in shared_preload_libraries: this server issues no ids and no ticket or pool values; add it there and restart the server'::text;
		RETURN;
	END IF;
	SELECT * INTO v_reg FROM @extschema@.snowid_registry_status();
	SELECT * INTO v_layout FROM @extschema@.snowid_layout();
	SELECT * INTO v_stats FROM @extschema@.snowid_stats();
	SELECT st.setting::bigint INTO v_max_wait
	  FROM pg_catalog.pg_settings st WHERE st.name = 'snowid.max_wait';
	v_issuing := v_host.node_id IS NOT NULL;
	IF v_reg.lease_until > v_now THEN
		v_lease_left := pg_catalog.date_trunc('second', v_reg.lease_until - v_now);
	END IF;
	v_refills := v_reg.state = 'ok' AND v_issuing;
	v_no_refill := CASE v_reg.state
		WHEN 'off' THEN 'no registry is named'
		WHEN 'connecting' THEN 'the registry has not answered yet'
		ELSE 'the registry does not answer' END;

	-- the generator: issuing now (the gate), then until the layout ends
	g_for := greatest(pg_catalog.date_trunc('second', v_layout.last_timestamp - v_now),
					  '0'::interval);
	IF v_standby THEN
		g_status := 'ok';
		g_for := NULL;
		g_reason := 'this server is a standby: it issues no ids until it is promoted';
	ELSIF NOT v_issuing THEN
		g_status := 'critical';
		g_for := '0'::interval;
		g_reason := CASE
			WHEN v_reg.state = 'off' THEN
				'snowid.node_id is not set and no registry is named: this server issues no ids; set a node id unique across servers, or name a registry in snowid.registry'
			WHEN v_reg.state = 'connecting' THEN
				'this server waits for the registry to grant it a node and issues no ids until it does; snowid_registry_status() says why'
			WHEN v_reg.state = 'conflict' THEN
				pg_catalog.format('the registry refused node %s to this server: it issues no ids; give one of the servers another node (snowid_registry_status() says which holds it)',
								  coalesce(v_reg.node_id::text, '(none)'))
			WHEN v_reg.state = 'unreachable' AND v_reg.lease_until <= v_now THEN
				pg_catalog.format('the lease of node %s ran out at %s and the registry does not answer: this server issues no ids until it does; bring the registry back',
								  v_reg.node_id,
								  pg_catalog.to_char(v_reg.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'))
			WHEN v_reg.state = 'unreachable' THEN
				'the registry cannot be reached and this server holds no lease (or cannot prove the one in its lease file its own): it issues no ids until the registry answers; bring the registry back'
			ELSE
				'this server issues no ids at the moment although the registry granted its node; snowid_registry_status() says why'
		END;
	ELSIF v_stats.lead_ms > v_host.max_lead_ms + coalesce(v_max_wait, 0) THEN
		g_status := 'critical';
		g_for := '0'::interval;
		g_reason := pg_catalog.format('the clock is %s ms behind the ids this server issued, more than snowid.max_lead and snowid.max_wait allow: snowid_next() fails until the clock catches up',
									  pg_catalog.round(v_stats.lead_ms::numeric));
	ELSIF v_stats.lead_ms > v_host.max_lead_ms THEN
		g_status := 'warning';
		g_reason := pg_catalog.format('the clock is %s ms behind the ids this server issued: snowid_next() waits for it, up to snowid.max_wait',
									  pg_catalog.round(v_stats.lead_ms::numeric));
	ELSIF g_for < '30 days'::interval THEN
		g_status := 'critical';
		g_reason := pg_catalog.format('the layout''s last timestamp is %s: snowid_next() fails after it; plan a layout change (a later epoch or more timestamp bits) now',
									  pg_catalog.to_char(v_layout.last_timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'));
	ELSIF g_for < '1 year'::interval THEN
		g_status := 'warning';
		g_reason := pg_catalog.format('the layout''s last timestamp is %s: snowid_next() fails after it; plan a layout change (a later epoch or more timestamp bits)',
									  pg_catalog.to_char(v_layout.last_timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'));
	ELSE
		g_status := 'ok';
		g_reason := pg_catalog.format('this server issues ids as node %s until the layout ends in %s',
									  v_host.node_id,
									  pg_catalog.to_char(v_layout.last_timestamp AT TIME ZONE 'UTC', 'YYYY'));
	END IF;

	-- the node lease, with a registry named
	IF v_reg.state = 'off' THEN
		l_status := NULL;
	ELSIF v_standby THEN
		l_status := 'ok';
		l_reason := 'this server is a standby: it claims a node once it is promoted';
	ELSIF v_reg.state = 'ok' THEN
		l_status := 'ok';
		l_reason := pg_catalog.format('the registry leases node %s to this server and renews the lease every second',
									  v_reg.node_id);
	ELSIF v_reg.state = 'conflict' THEN
		l_status := 'critical';
		l_for := '0'::interval;
		l_reason := pg_catalog.format('the registry refused node %s to this server: it issues no ids and no pool values until the node is free or it gets another',
									  coalesce(v_reg.node_id::text, '(none)'));
	ELSIF v_reg.state = 'unreachable' AND v_reg.detail LIKE 'unchecked:%' THEN
		l_status := 'warning';
		l_reason := pg_catalog.format('the registry named by reload cannot be reached: this server issues ids as node %s unchecked by a registry until it answers; bring it back or fix snowid.registry',
									  v_host.node_id);
	ELSIF v_reg.state = 'unreachable' AND v_issuing AND v_lease_left IS NOT NULL THEN
		l_for := v_lease_left;
		l_status := CASE WHEN l_for < '1 hour'::interval THEN 'critical' ELSE 'warning' END;
		l_reason := pg_catalog.format('the registry is unreachable: this server issues until its lease of node %s ends at %s; bring the registry back',
									  v_reg.node_id,
									  pg_catalog.to_char(v_reg.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'));
	ELSIF v_reg.state = 'unreachable' AND v_reg.lease_until <= v_now THEN
		l_status := 'critical';
		l_for := '0'::interval;
		l_reason := pg_catalog.format('the registry is unreachable and the lease of node %s ran out at %s: this server issues nothing until the registry answers; bring the registry back',
									  v_reg.node_id,
									  pg_catalog.to_char(v_reg.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'));
	ELSIF v_reg.state = 'unreachable' THEN
		l_status := 'critical';
		l_for := '0'::interval;
		l_reason := 'the registry is unreachable and this server holds no lease it may issue under: it issues nothing until the registry answers; bring the registry back';
	ELSIF v_issuing THEN
		-- connecting, issuing under snowid.node_id (a registry named by reload)
		l_status := 'warning';
		l_reason := pg_catalog.format('the registry named by reload has not answered yet: this server issues ids as node %s unchecked until it does',
									  v_host.node_id);
	ELSE
		l_status := 'critical';
		l_for := '0'::interval;
		l_reason := 'the registry has not answered since this server started or snowid.registry changed: it issues nothing until the registry grants it a node';
	END IF;

	RETURN QUERY
	SELECT h.component, h.name, h.status, h.issues_for, h.reason
	  FROM (
		SELECT 'generator'::text AS component, NULL::text AS name,
			   g_status AS status, g_for AS issues_for, g_reason AS reason
		UNION ALL
		SELECT 'lease', NULL, l_status, l_for, l_reason
		 WHERE l_status IS NOT NULL
		UNION ALL
		-- striped tickets of this database (a pooled one is its pool's row)
		SELECT 'ticket', t.ticket::text,
			   CASE WHEN t.values_left = 0 THEN 'critical'
					WHEN t.values_left * 100 < k.total THEN 'warning'
					ELSE 'ok' END,
			   CASE WHEN t.values_left = 0 THEN '0'::interval END,
			   CASE WHEN t.values_left = 0 THEN
						pg_catalog.format('ticket %s has no values left for shard %s: its next value fails (2200H); move to a bigint ticket',
										  t.ticket, t.shard)
					WHEN t.values_left * 100 < k.total THEN
						pg_catalog.format('ticket %s has %s of its %s values left for shard %s, under 1 %%: move to a bigint ticket before they run out',
										  t.ticket, t.values_left, k.total, t.shard)
					ELSE
						pg_catalog.format('ticket %s has %s of its %s values left for shard %s',
										  t.ticket, t.values_left, k.total, t.shard)
			   END
		  FROM @extschema@.snowid_tickets t
		 CROSS JOIN LATERAL (
			SELECT pg_catalog.div(t.last_value::numeric - t.first_value, t.shards) + 1
				   AS total) k
		 WHERE t.pool IS NULL AND t.values_left IS NOT NULL
		UNION ALL
		-- the pools this server draws on (shared by every database)
		SELECT 'pool', p.pool,
			   CASE WHEN c.kind IN ('standby', 'refills') THEN 'ok'
					WHEN c.kind IN ('no rate', 'runs out') AND
						 NOT coalesce(b.bound < '1 hour'::interval, false) THEN 'warning'
					ELSE 'critical' END,
			   CASE WHEN c.kind IN ('standby', 'refills', 'no rate') THEN NULL
					WHEN c.kind = 'empty' AND p.values_in_hand > 0 THEN p.time_left
					WHEN c.kind = 'runs out' THEN b.bound
					ELSE '0'::interval END,
			   CASE c.kind
					WHEN 'standby' THEN
						pg_catalog.format('this server is a standby: pool %s hands out nothing until it is promoted',
										  p.pool)
					WHEN 'empty' THEN
						pg_catalog.format('the registry has no values left in pool %s: this server hands out the %s it holds, then none; move to a new pool or a bigint ticket',
										  p.pool, p.values_in_hand)
					WHEN 'unknown' THEN
						pg_catalog.format('the registry has no pool %s: create it there (snowid_pool_create) or drop the tickets that name it',
										  p.pool)
					WHEN 'unusable' THEN
						pg_catalog.format('the registry''s answers for pool %s cannot serve this server, which asks it nothing more; snowid_pool_holdings() says why',
										  p.pool)
					WHEN 'closed' THEN
						pg_catalog.format('pool %s is closed: this server is shutting down', p.pool)
					WHEN 'no node' THEN
						pg_catalog.format('this server holds no node: pool %s hands out nothing until it does',
										  p.pool)
					WHEN 'refills' THEN
						pg_catalog.format('pool %s holds %s values, and the registry refills it at half use',
										  p.pool, p.values_in_hand)
					WHEN 'dry' THEN
						pg_catalog.format('%s: pool %s holds no values, and its tickets fail until the registry grants a range',
										  v_no_refill, p.pool)
					WHEN 'no rate' THEN
						pg_catalog.format('%s: pool %s hands out the %s values it holds, then none',
										  v_no_refill, p.pool, p.values_in_hand)
					ELSE
						pg_catalog.format('%s: pool %s hands out the %s values it holds for %s (at its rate, within this server''s lease), then none',
										  v_no_refill, p.pool, p.values_in_hand, b.bound)
			   END
		  FROM @extschema@.snowid_pool_holdings() p
		 CROSS JOIN LATERAL (
			SELECT CASE WHEN p.time_left IS NULL THEN v_lease_left
						WHEN v_lease_left IS NULL THEN p.time_left
						ELSE least(p.time_left, v_lease_left) END AS bound) b
		 CROSS JOIN LATERAL (
			SELECT CASE WHEN v_standby THEN 'standby'
						WHEN p.state IN ('empty', 'unknown', 'unusable', 'closed') THEN p.state
						WHEN NOT v_issuing THEN 'no node'
						WHEN v_refills THEN 'refills'
						WHEN p.values_in_hand = 0 THEN 'dry'
						WHEN b.bound IS NULL THEN 'no rate'
						ELSE 'runs out' END AS kind) c
	  ) h
	 ORDER BY CASE h.status WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
			  h.issues_for NULLS LAST, h.component COLLATE "C", h.name COLLATE "C";
END
$$;

REVOKE ALL ON FUNCTION snowid_health() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowid_health() TO pg_monitor;

COMMENT ON FUNCTION snowid_health() IS
'whether this server can issue and for how long: per generator, node lease, ticket of this database and pool, a status (critical, warning, ok), issues_for (0: nothing now; NULL: no bound known) and the reason, the soonest problem first (for pg_monitor)';
