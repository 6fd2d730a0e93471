/* snowid--2.0--2.1.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '2.1'" to load this file. \quit

-- 2.1.  Each change has a section of its own below.

-- ---- role-limit claim of a lapsed own node ----
-- A start taking back its own node after its lease ran out is counted
-- against max_nodes_per_role (step 6) like a new holder: 2.0 skipped the
-- count for a start's own node, so a role could claim other nodes while
-- its lease was out and then take it back, holding more than the limit.
CREATE OR REPLACE FUNCTION snowid_registry_claim_serve(p_node_id integer,
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

		IF result = 'ok' AND
		   (NOT v_dec.own OR v_row.lease_until < v_now) THEN
			-- 6. A new holder, or the holder's start taking back its own
			-- node after its lease ran out (not counted among the role's
			-- nodes meanwhile, so the role may have claimed others in its
			-- place): within the role's share of the nodes.  A node still
			-- leased to its start (a renewal, a re-assertion, a claim
			-- sent again) is counted already and always renews.
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

-- ---- claim-identity NULL port or system identifier refused ----
-- A claim with no port or no system identifier was kept (the identity
-- test was NULL, not true): refused now as any identity no server has.
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
	-- a start identity of 32 hex digits); a port and a system identifier
	-- every server has (2.1: NULL was kept, the test being NULL)
	IF octet_length(p_cluster_name) > 256 OR octet_length(p_host) > 256 OR
	   p_port IS NULL OR p_port NOT BETWEEN 1 AND 65535 OR
	   p_system_identifier IS NULL OR
	   NOT (p_system_identifier >= 0 AND
			p_system_identifier < 18446744073709551616 AND
			p_system_identifier = trunc(p_system_identifier)) OR
	   octet_length(p_start_id) NOT BETWEEN 1 AND 64 THEN
		RAISE EXCEPTION 'invalid identity of a member''s start'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('A member sends its cluster_name and host name (at most 256 bytes each, %s and %s here), a port from 1 to 65535 (%s), a system identifier from 0 to 2^64 - 1 (%s) and a start identity of 1 to 64 bytes (%s); nothing was recorded.',
								  octet_length(p_cluster_name), octet_length(p_host),
								  coalesce(p_port::text, 'none'),
								  coalesce(p_system_identifier::text, 'none'),
								  octet_length(p_start_id)),
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
