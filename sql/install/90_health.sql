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
