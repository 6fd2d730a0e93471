/* snowid--1.7--1.8.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.8'" to load this file. \quit

-- 1.8: no caller, copy or forgetful registry can make a duplicate or lock
-- others out (issue 29).  Each function this version changes is replaced
-- whole below; nothing else moves.

-- ---- i29 claims (the registry's claims: reports bounded, per-role limit exact, identities redacted) ----

CREATE TABLE snowid_registry_role (
	role name PRIMARY KEY
);

COMMENT ON TABLE snowid_registry_role IS
'registry, internal: one row per login role that claimed a node, locked by its claims of new nodes so that they count its nodes one at a time (max_nodes_per_role)';

CREATE FUNCTION snowid_registry_id_bound(p_layout text, p_at timestamptz)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT LEAST(
		   GREATEST(
			   (pg_catalog.floor((EXTRACT(epoch FROM $2) -
								  EXTRACT(epoch FROM m[1]::timestamptz)) *
								 1000000 / m[2]::numeric) + 1) *
			   pg_catalog.power(2::numeric, m[3]::integer + m[4]::integer),
			   0),
		   pg_catalog.power(2::numeric, m[5]::integer),
		   9223372036854775807)::bigint
  FROM pg_catalog.regexp_match($1,
		   '^epoch ([-0-9]+ [0-9:.]+\+00), tick ([1-9][0-9]{0,12})us, node_bits ([0-9]{1,2}), sequence_bits ([0-9]{1,2}), id_bits ([0-9]{1,2})$') m
 WHERE m[5]::integer <= 63
$$;

REVOKE ALL ON FUNCTION snowid_registry_id_bound(text, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_id_bound(text, timestamptz) IS
'registry, internal: the first ID of the tick after a time in a layout as members write it (every ID issued by then lies below it), capped at the layout''s end and bigint''s; NULL for a text that is not a layout';

CREATE FUNCTION snowid_registry_check_report(p_what text,
											 p_id bigint,
											 p_layout text,
											 p_max_lead_ms bigint,
											 p_margin_ms bigint)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_lead_ms bigint := least(coalesce(p_max_lead_ms, 0), 3600000) +
		least(coalesce(p_margin_ms, 0), 3600000);
	v_bound bigint;
BEGIN
	IF p_id IS NULL THEN
		RETURN;
	END IF;
	v_bound := coalesce(@extschema@.snowid_registry_id_bound(p_layout,
						pg_catalog.clock_timestamp() + v_lead_ms * interval '1 ms'),
						9223372036854775807);
	IF p_id < 0 OR p_id > v_bound THEN
		RAISE EXCEPTION 'reported % % is outside 0 to %', p_what, p_id, v_bound
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('No ID of the registry''s layout issued by now plus the holder''s snowid.max_lead and the registry''s lead_margin (%s ms in all) lies beyond %s; nothing was recorded.',
								  v_lead_ms, v_bound),
				  HINT = 'Report the bound of the IDs this server issued, as its background worker does.';
	END IF;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_check_report(text, bigint, text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_check_report(text, bigint, text, bigint, bigint) IS
'registry, internal: refuses (22023) an ID a member reports that lies below 0 or beyond the first ID of the registry''s layout after its clock plus the holder''s max_lead and the lead_margin';

CREATE FUNCTION snowid_registry_holder_shown(p_node_id integer,
											 OUT holder text,
											 OUT identified boolean)
RETURNS record
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN s.shown THEN v.holder
			WHEN v.registry_host THEN 'the registry''s own server'
			ELSE 'another server' END,
	   s.shown
  FROM @extschema@.snowid_registry_nodes v,
	   LATERAL (SELECT pg_catalog.pg_has_role(pg_catalog.session_user(), 'pg_monitor', 'USAGE') OR
					   v.holder_role OPERATOR(pg_catalog.=) pg_catalog.session_user() AS shown) s
 WHERE v.node_id OPERATOR(pg_catalog.=) $1
$$;

REVOKE ALL ON FUNCTION snowid_registry_holder_shown(integer) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_holder_shown(integer) IS
'registry, internal: the holder of a node as a claim or a pool grant names it to its caller: its identity for superusers, pg_monitor and the holder''s own login role, "another server" for any other';

CREATE FUNCTION snowid_registry_claim_check(p_max_node integer,
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

REVOKE ALL ON FUNCTION snowid_registry_claim_check(integer, text, text, text, bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_check(integer, text, text, text, bigint, bigint, bigint) IS
'registry, internal: raises an error for arguments of snowid_registry_claim that no member sends (a layout or start missing, a short secret, a lease, takeover time or max_lead out of range (max_lead at most an hour, as snowid.max_lead), a highest node ID that is not the layout''s)';

CREATE FUNCTION snowid_registry_claim_settings(p_layout text)
RETURNS snowid_registry_settings
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_set @extschema@.snowid_registry_settings;
BEGIN
	SELECT s.* INTO v_set FROM @extschema@.snowid_registry_settings s;
	IF NOT FOUND OR v_set.layout IS NULL THEN
		BEGIN
			INSERT INTO @extschema@.snowid_registry_settings AS s (only_row, layout)
			VALUES (true, p_layout)
			ON CONFLICT (only_row) DO UPDATE SET layout = p_layout
			 WHERE s.layout IS NULL;
		EXCEPTION WHEN lock_not_available THEN
			RAISE EXCEPTION 'the registry''s layout is being set by another transaction'
				USING ERRCODE = 'lock_not_available',
					  HINT = 'Claim again once that transaction ends.';
		END;
		SELECT s.* INTO v_set FROM @extschema@.snowid_registry_settings s;
	END IF;
	RETURN v_set;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_claim_settings(text) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_settings(text) IS
'registry, internal: the registry''s settings for a claim, the layout set to the claim''s if none was set yet';

CREATE FUNCTION snowid_registry_claim_host(p_set snowid_registry_settings,
										   p_now timestamptz,
										   OUT node_id integer,
										   OUT issued_below bigint)
RETURNS record
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_host record;
	v_pair record;
	v_row @extschema@.snowid_registry_node;
	v_xmin text;
	v_live boolean;
BEGIN
	SELECT h.* INTO v_host FROM @extschema@.snowid_registry_host() h;
	IF v_host.layout = p_set.layout THEN
		node_id := v_host.node_id;
		issued_below := v_host.issued_below;
	END IF;
	IF node_id IS NULL THEN
		RETURN;
	END IF;
	SELECT n AS r, n.xmin::text AS x INTO v_pair
	  FROM @extschema@.snowid_registry_node n WHERE n.node_id = snowid_registry_claim_host.node_id;
	IF FOUND THEN
		v_row := v_pair.r;
		v_xmin := v_pair.x;
	ELSE
		v_row := NULL;
		v_xmin := NULL;
	END IF;
	v_live := coalesce(v_row.released_at IS NULL AND v_row.lease_until >= p_now, false);
	-- (a member's live lease is not overwritten: its next claim is
	-- refused, and the row is taken once that lease is over)
	IF v_row.node_id IS NULL OR NOT v_live OR
	   (v_row.registry_host AND
		(v_row.lease_until < p_now + p_set.max_lease / 2 OR
		 v_row.start_id IS DISTINCT FROM v_host.start_id)) THEN
		BEGIN
			IF v_row.node_id IS NULL THEN
				INSERT INTO @extschema@.snowid_registry_node
					(node_id, cluster_name, host, port, system_identifier, start_id,
					 layout, claimed_at, last_seen, lease_until, released_at, last_id,
					 holder_role, secret_hash, max_lead_ms, floor_until, registry_host)
				VALUES (snowid_registry_claim_host.node_id, v_host.cluster_name,
						v_host.host, v_host.port,
						v_host.system_identifier, v_host.start_id, p_set.layout,
						p_now, p_now, p_now + p_set.max_lease, NULL, issued_below,
						NULL, NULL, v_host.max_lead_ms, NULL, true);
			ELSE
				PERFORM FROM @extschema@.snowid_registry_node n
				  WHERE n.node_id = snowid_registry_claim_host.node_id
					AND n.xmin::text = v_xmin
				  FOR UPDATE NOWAIT;
				IF NOT FOUND THEN
					RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
				END IF;
				-- a holder gone (a member, or this server under an
				-- earlier lease ended by hand) leaves its floor
				UPDATE @extschema@.snowid_registry_node n
				   SET cluster_name = v_host.cluster_name, host = v_host.host,
					   port = v_host.port, system_identifier = v_host.system_identifier,
					   start_id = v_host.start_id, layout = p_set.layout,
					   claimed_at = CASE WHEN v_live AND n.start_id = v_host.start_id
										 THEN n.claimed_at ELSE p_now END,
					   last_seen = p_now, lease_until = p_now + p_set.max_lease,
					   released_at = NULL,
					   last_id = greatest(n.last_id, issued_below),
					   holder_role = NULL, secret_hash = NULL,
					   max_lead_ms = CASE WHEN v_live
										  THEN greatest(n.max_lead_ms, v_host.max_lead_ms)
										  ELSE v_host.max_lead_ms END,
					   floor_until = CASE WHEN v_live THEN n.floor_until
										  ELSE greatest(n.floor_until,
														coalesce(n.released_at, n.lease_until) +
														coalesce(n.max_lead_ms, 0) * interval '1 ms')
									 END,
					   registry_host = true
				 WHERE n.node_id = snowid_registry_claim_host.node_id;
			END IF;
		EXCEPTION WHEN lock_not_available OR unique_violation THEN
			NULL;		-- being written: the node stays out all the same
		END;
	END IF;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_claim_host(snowid_registry_settings, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_host(snowid_registry_settings, timestamptz) IS
'registry, internal: the node the registry''s own server issues IDs under in the registry''s layout and a bound above every ID it has issued, its row kept from members';

CREATE FUNCTION snowid_registry_claim_target(p_start_id text,
											 p_role name,
											 p_hash text,
											 p_now timestamptz,
											 p_max_node integer,
											 p_exclude integer[],
											 p_host_node integer)
RETURNS integer
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_target integer;
BEGIN
	SELECT min(n.node_id) INTO v_target
	  FROM @extschema@.snowid_registry_node n
	 WHERE n.start_id = p_start_id AND n.holder_role = p_role
	   AND n.secret_hash = p_hash AND n.released_at IS NULL
	   AND n.lease_until >= p_now AND n.node_id <= p_max_node
	   AND n.node_id <> ALL (p_exclude);
	IF v_target IS NULL THEN
		-- The lowest free node is 0 or one above a node that is not.
		WITH held AS (
			SELECT n.node_id AS node
			  FROM @extschema@.snowid_registry_node n
			 WHERE n.released_at IS NULL AND n.lease_until >= p_now
			UNION ALL
			SELECT unnest(p_exclude)
			UNION ALL
			SELECT p_host_node WHERE p_host_node IS NOT NULL)
		SELECT min(c.node) INTO v_target
		  FROM (SELECT 0 AS node
				UNION ALL
				SELECT h.node + 1 FROM held h) c
		 WHERE c.node <= p_max_node
		   AND NOT EXISTS (SELECT FROM held h WHERE h.node = c.node);
	END IF;
	RETURN v_target;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_claim_target(text, name, text, timestamptz, integer, integer[], integer) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_target(text, name, text, timestamptz, integer, integer[], integer) IS
'registry, internal: the node a claim naming none asks for: the one its start holds already, else the lowest free one not excluded; NULL if none is free';

CREATE FUNCTION snowid_registry_claim_decide(p_row snowid_registry_node,
											 p_target integer,
											 p_now timestamptz,
											 p_role name,
											 p_hash text,
											 p_start_id text,
											 p_system_identifier numeric,
											 p_predecessor text,
											 p_promoted boolean,
											 p_takeover_ms bigint,
											 p_host_node integer,
											 OUT result text,
											 OUT holder text,
											 OUT detail text,
											 OUT floor_id bigint,
											 OUT floor_until timestamptz,
											 OUT row_floor timestamptz,
											 OUT own boolean,
											 OUT successor boolean)
RETURNS record
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_row @extschema@.snowid_registry_node := p_row;
	v_hosted boolean;
	v_identified boolean;
BEGIN
	result := 'ok';
	-- a row of the registry's own server: no member renews it or
	-- takes it over
	v_hosted := coalesce(v_row.registry_host, false);
	-- a renewal by the holder (a lease of 1.4, bound to no role yet, is
	-- bound to the role and secret of its own start's first renewal)
	own := NOT v_hosted AND coalesce(v_row.node_id IS NOT NULL AND
		v_row.start_id = p_start_id AND v_row.released_at IS NULL AND
		((v_row.holder_role = p_role AND v_row.secret_hash = p_hash) OR
		 (v_row.holder_role IS NULL AND v_row.secret_hash IS NULL AND
		  v_row.system_identifier = p_system_identifier)), false);
	-- the same server after a crash, or its promoted standby, under the
	-- same role (a lease of 1.4: its own next start only)
	successor := NOT v_hosted AND coalesce(v_row.node_id IS NOT NULL AND NOT own AND
		v_row.system_identifier = p_system_identifier AND
		((v_row.holder_role = p_role AND
		  (v_row.start_id = p_predecessor OR p_promoted)) OR
		 (v_row.holder_role IS NULL AND v_row.start_id = p_predecessor)), false);
	-- what the row keeps for later holders: every ID of the holders so
	-- far lies below it (the holder's own lease end counts only once it
	-- has released the node or its lease has run out)
	row_floor := v_row.floor_until;

	IF p_target = p_host_node THEN
		-- the registry's own server issues IDs under it now (an
		-- assigned node moves, even its holder's successor's)
		result := 'conflict';
		successor := false;
		SELECT h.holder INTO holder
		  FROM @extschema@.snowid_registry_holder_shown(p_target) h
		 WHERE v_row.registry_host;
		holder := coalesce(holder, 'the registry''s own server');
		detail := format('the registry''s own server issues IDs as node %s (its snowid.node_id), which the registry grants no other server: give this server another snowid.node_id, or leave it unset to have the registry assign a free one',
						 p_target);
	ELSIF v_row.node_id IS NULL THEN
		NULL;			-- never claimed
	ELSIF own THEN
		NULL;
	ELSIF v_row.released_at IS NOT NULL OR v_row.lease_until < p_now THEN
		-- released or run out: the new holder stays above the old
		-- holders' last ID, and above the end of their leases plus what
		-- they could issue ahead of their clocks (their max_lead)
		-- (the registry's own server, issuing under it no more, may
		-- have done so until its current start)
		row_floor := greatest(v_row.floor_until,
							  coalesce(v_row.released_at, v_row.lease_until) +
							  coalesce(v_row.max_lead_ms, 0) * interval '1 ms',
							  CASE WHEN v_hosted
								   THEN pg_catalog.pg_postmaster_start_time() +
										coalesce(v_row.max_lead_ms, 0) * interval '1 ms'
							  END);
		floor_id := v_row.last_id;
		floor_until := row_floor;
		detail := CASE WHEN v_hosted
					   THEN 'kept for the registry''s own server, which issues IDs under it no more, until its lease ran out'
					   WHEN v_row.released_at IS NOT NULL
					   THEN 'released by its holder'
					   ELSE 'the lease of its holder had run out'
				  END;
	ELSIF successor AND
		  v_row.last_seen <= p_now - p_takeover_ms * interval '1 ms' THEN
		-- whose own high-water mark covers what the old holder issued
		floor_id := v_row.last_id;
		floor_until := v_row.floor_until;
		detail := 'took over from an earlier start of this server';
	ELSE
		result := 'conflict';
		SELECT h.holder, h.identified INTO holder, v_identified
		  FROM @extschema@.snowid_registry_holder_shown(p_target) h;
		detail := CASE WHEN v_identified
					   THEN format('node %s is held by %s, last seen %s s ago, lease until %s; ',
								   p_target, holder,
								   round(EXTRACT(epoch FROM p_now - v_row.last_seen), 1),
								   v_row.lease_until)
					   ELSE format('node %s is held by %s under a live lease; ',
								   p_target, holder)
				  END ||
			CASE WHEN v_hosted
				 THEN 'the registry''s own server issued IDs under it: it is kept from other servers until its lease runs out (or is ended by hand once that server is known never to issue under it again)'
				 WHEN v_row.start_id = p_start_id
				 THEN 'this claim names the holder''s start but not its login role and secret'
				 WHEN successor
				 THEN format('a server with the same system identifier (a restart or a promoted standby) under the same login role may take it over only after its holder has been silent for %s s',
							 trim_scale(p_takeover_ms / 1000.0))
				 WHEN v_row.holder_role <> p_role
				 THEN 'it is held under another login role; it is free again once its holder releases it or its lease runs out'
				 WHEN v_row.system_identifier = p_system_identifier
				 THEN 'this server has the same system identifier but neither held the node before nor was promoted from a standby: a copy of the holder, such as a clone made with pg_basebackup'
				 ELSE 'it is free again once its holder releases it or its lease runs out'
			END;
	END IF;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_claim_decide(snowid_registry_node, integer, timestamptz, name, text, text, numeric, text, boolean, bigint, integer) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_decide(snowid_registry_node, integer, timestamptz, name, text, text, numeric, text, boolean, bigint, integer) IS
'registry, internal: the decision of a claim on the row of its target node as it stands: ok (never claimed, a renewal, released or run out, a takeover by the same server) or conflict naming the holder, with the floor for a new holder';

CREATE FUNCTION snowid_registry_claim_role_holds(p_role name,
												 p_now timestamptz,
												 p_target integer)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	BEGIN
		INSERT INTO @extschema@.snowid_registry_role AS r (role) VALUES (p_role)
		ON CONFLICT (role) DO NOTHING;
		PERFORM FROM @extschema@.snowid_registry_role r
		  WHERE r.role = p_role FOR UPDATE NOWAIT;
	EXCEPTION WHEN lock_not_available THEN
		RAISE EXCEPTION 'login role % is claiming another node in a transaction still open', p_role
			USING ERRCODE = 'lock_not_available',
				  DETAIL = 'Claims of new nodes by one login role are counted one at a time against snowid_registry_settings.max_nodes_per_role.',
				  HINT = 'Claim again in a moment.';
	END;
	-- a statement of its own: it sees every claim committed before the lock
	RETURN (SELECT count(*)::integer
			  FROM @extschema@.snowid_registry_node n
			 WHERE n.holder_role = p_role AND n.released_at IS NULL
			   AND n.lease_until >= p_now AND n.node_id <> p_target);
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_claim_role_holds(name, timestamptz, integer) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_role_holds(name, timestamptz, integer) IS
'registry, internal: how many nodes other than the target a login role holds under a live lease, counted under the lock of its row in snowid_registry_role (taken without waiting), for snowid_registry_settings.max_nodes_per_role';

CREATE FUNCTION snowid_registry_claim_write(p_row snowid_registry_node,
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

REVOKE ALL ON FUNCTION snowid_registry_claim_write(snowid_registry_node, text, integer, text, text, integer, numeric, text, text, timestamptz, timestamptz, bigint, name, text, bigint, boolean, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_write(snowid_registry_node, text, integer, text, text, integer, numeric, text, text, timestamptz, timestamptz, bigint, name, text, bigint, boolean, timestamptz) IS
'registry, internal: writes the row of a node granted by a claim, without waiting and only as the claim read it';

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
	v_held integer;
	v_busy integer := 0;
	v_host record;
BEGIN
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

		IF result = 'ok' AND NOT v_dec.own AND v_host.issued_below IS NOT NULL THEN
			-- a new holder also stays above every ID the registry's own
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
				-- ones (an error: the member keeps its lease and asks again)
				v_busy := v_busy + 1;
				IF v_dec.own OR v_dec.successor OR p_auto IS NOT TRUE OR v_busy > 3 THEN
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

REVOKE ALL ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) IS
'registry, internal: claims or renews a node ID lease for a member''s login role and start (called by its background worker); ok with the node, the lease the registry grants and the floor to stay above, or conflict naming the holder';

CREATE OR REPLACE FUNCTION snowid_registry_release(p_node_id integer, p_start_id text,
										p_secret text, p_last_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
	v_now timestamptz := pg_catalog.clock_timestamp();
	v_row @extschema@.snowid_registry_node;
BEGIN
	SELECT n.* INTO v_row FROM @extschema@.snowid_registry_node n
	  WHERE n.node_id = p_node_id AND n.start_id = p_start_id
		AND n.holder_role = pg_catalog.session_user()
		AND n.secret_hash = encode(sha256(convert_to(coalesce(p_secret, ''), 'UTF8')), 'hex')
		AND n.released_at IS NULL
	  FOR UPDATE NOWAIT;
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	-- the bound of the IDs it issued, as it reports it: possible
	PERFORM @extschema@.snowid_registry_check_report('last ID', p_last_id,
		v_row.layout, v_row.max_lead_ms,
		(SELECT (EXTRACT(epoch FROM s.lead_margin) * 1000)::bigint
		   FROM @extschema@.snowid_registry_settings s));
	UPDATE @extschema@.snowid_registry_node n
	   SET released_at = v_now, lease_until = v_now, last_seen = v_now,
		   last_id = greatest(n.last_id, p_last_id),
		   floor_until = greatest(n.floor_until,
								  v_now + coalesce(n.max_lead_ms, 0) * interval '1 ms')
	 WHERE n.node_id = p_node_id;
	RETURN true;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_release(integer, text, text, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_release(integer, text, text, bigint) IS
'registry, internal: ends the lease of a node ID held by the given start, login role and secret at once (called by a member''s background worker at a clean shutdown); false if they do not hold it';

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

	IF result IS NULL AND p_want > 0 THEN
		-- 6. and 7. A new range.  In a subtransaction: the same request
		-- granted at the same moment by another call (a retry while the
		-- first is still running) undoes this one and returns that one.
		BEGIN
			IF v_pool.upstream THEN
				SELECT t.first_value, t.last_value, t.state
				  INTO v_first, v_last, v_state
				  FROM @extschema@.snowid_pool_take(p_pool, p_want) t;
			ELSIF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r
						WHERE r.rolname = session_user) AND
				  (SELECT count(*) FROM @extschema@.snowid_pool_range r
					WHERE r.pool = p_pool AND NOT r.reported
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
				PERFORM FROM @extschema@.snowid_pool p WHERE p.name = p_pool
				  FOR UPDATE NOWAIT;
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

REVOKE ALL ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]) IS
'registry, internal: grants the live holder of a node (its login role, start and secret; called by its background worker) the next range of a pool, at most max_grant_share of what is left, or the same one again for a repeated request; granted, again, info, empty, wait, busy, refused or unknown';

-- ---- end of i29 claims ----
