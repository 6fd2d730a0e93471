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

-- ---- end of i29 claims ----

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

-- ---- a registry that may have forgotten waits before it grants (issue
-- 29, finding 4): the setting reassert_grace, the time snowid was created,
-- snowid_registry_dropped_at(), snowid_registry_recovering(),
-- snowid_registry_reassert(), the grace in snowid_registry_claim() and
-- snowid_pool_grant(), and the event trigger snowid_drop_guard ----

ALTER TABLE snowid_registry_settings
	ADD COLUMN reassert_grace interval NOT NULL DEFAULT '20 seconds'
		CHECK (reassert_grace OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval);

COMMENT ON TABLE snowid_registry_settings IS
'registry: the one layout every member must use (set by the first claim; a member with another layout is refused) and the limits the registry sets on every member: longest lease, shortest takeover delay, nodes per login role, largest share of a pool one grant takes, margin of a lease over a member''s max_lead, grants of a pool to one role in an hour, and how long after it may have forgotten its leases (a start, a promotion, a restore, the extension created again) it grants nothing new while their holders re-assert them';

CREATE TABLE snowid_registry_installed (
	installed_at timestamptz NOT NULL
);

INSERT INTO snowid_registry_installed VALUES (pg_catalog.now());

COMMENT ON TABLE snowid_registry_installed IS
'registry: when this copy of the extension was created (by CREATE EXTENSION, a restore, or the update to 1.8); until reassert_grace after it, the registry grants nothing new';

REVOKE ALL ON snowid_registry_installed FROM PUBLIC;

CREATE FUNCTION snowid_drop_guard()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'snowid_drop_guard'
LANGUAGE C;

REVOKE ALL ON FUNCTION snowid_drop_guard() FROM PUBLIC;

COMMENT ON FUNCTION snowid_drop_guard() IS
'event trigger on DROP SCHEMA, DROP EXTENSION and DROP OWNED: refuses to drop the snowid extension or its schema unless a superuser does';

CREATE EVENT TRIGGER snowid_drop_guard ON ddl_command_start
WHEN TAG IN ('DROP SCHEMA', 'DROP EXTENSION', 'DROP OWNED')
EXECUTE FUNCTION snowid_drop_guard();

CREATE FUNCTION snowid_registry_dropped_at()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowid_registry_dropped_at'
LANGUAGE C VOLATILE;

REVOKE ALL ON FUNCTION snowid_registry_dropped_at() FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_dropped_at() IS
'registry, internal: when a superuser last dropped snowid (or its schema) in this database, NULL if never';

CREATE FUNCTION snowid_registry_recovering()
RETURNS text
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT format('the registry %s %s s ago and grants new leases after %s s, when every holder has had time to re-assert its own',
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

REVOKE ALL ON FUNCTION snowid_registry_recovering() FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_recovering() IS
'registry, internal: while the registry may have forgotten leases (its server started or was promoted, or snowid was created, less than reassert_grace ago), why it grants nothing new yet; NULL after';

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

CREATE FUNCTION snowid_registry_reassert(p_node_id integer,
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
										 p_last_id bigint,
										 p_held_until timestamptz)
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
BEGIN
	IF NOT has_function_privilege(session_user,
			'@extschema@.snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint)'::regprocedure,
			'EXECUTE') THEN
		RAISE EXCEPTION 'permission denied for function snowid_registry_reassert'
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'It is for the roles that may call snowid_registry_claim.';
	END IF;
	PERFORM set_config('snowid_registry.reasserting',
		CASE WHEN p_node_id IS NOT NULL AND
				  p_held_until > clock_timestamp() AND
				  p_held_until <= clock_timestamp() +
					  coalesce((SELECT s.max_lease
								  FROM @extschema@.snowid_registry_settings s),
							   interval '7 days')
			 THEN format('%s %s', p_node_id, p_start_id)
			 ELSE '' END,
		true);
	RETURN QUERY
	SELECT * FROM @extschema@.snowid_registry_claim(p_node_id, p_auto, p_max_node,
		p_layout, p_cluster_name, p_host, p_port, p_system_identifier, p_start_id,
		p_secret, p_predecessor, p_promoted, p_lease_ms, p_takeover_ms,
		p_max_lead_ms, p_last_id) c;
	PERFORM set_config('snowid_registry.reasserting', '', true);
END
$$;

COMMENT ON FUNCTION snowid_registry_reassert(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint, timestamptz) IS
'registry, internal: snowid_registry_claim for a member that holds the lease until p_held_until (its renewal): a registry that may have forgotten the lease grants it back to its holder before any new one';

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
