/* snowid--1.7--1.8.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.8'" to load this file. \quit

-- 1.8: no caller, copy or forgetful registry can make a duplicate or lock
-- others out (issue 29).  Each function this version changes is replaced
-- whole below; nothing else moves.

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
			   greatest(CASE WHEN s.leases THEN s.started END,
						CASE WHEN s.leases THEN s.promoted END,
						CASE WHEN s.leases OR s.dropped THEN s.installed END) AS since
		  FROM (SELECT clock_timestamp() AS now,
					   EXISTS (SELECT FROM @extschema@.snowid_registry_node n
								WHERE n.released_at IS NULL) AS leases,
					   @extschema@.snowid_registry_dropped_at() IS NOT NULL AS dropped,
					   pg_postmaster_start_time() AS started,
					   (SELECT f.modification
						  FROM pg_stat_file('pg_wal/' ||
											"left"(pg_walfile_name(pg_current_wal_lsn()), 8) ||
											'.history', true) f
						 WHERE NOT pg_is_in_recovery()) AS promoted,
					   (SELECT max(i.installed_at)
						  FROM @extschema@.snowid_registry_installed i) AS installed,
					   coalesce((SELECT r.reassert_grace
								   FROM @extschema@.snowid_registry_settings r),
								interval '20 seconds') AS grace) s) t
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
	v_bits integer;
	v_target integer := p_node_id;
	v_exclude integer[] := '{}';
	v_row @extschema@.snowid_registry_node;
	v_xmin text;
	v_pair record;
	v_successor boolean;
	v_own boolean;
	v_held integer;
	v_floor timestamptz;
	v_busy integer := 0;
	v_host record;
	v_host_node integer;
	v_host_below bigint;
	v_hosted boolean;
	v_live boolean;
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
	   p_max_lead_ms IS NULL OR p_max_lead_ms < 0 THEN
		RAISE EXCEPTION 'invalid lease of % ms, takeover time of % ms or max_lead of % ms',
			coalesce(p_lease_ms::text, 'NULL'), coalesce(p_takeover_ms::text, 'NULL'),
			coalesce(p_max_lead_ms::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The lease must be positive, the takeover time and max_lead zero or more.';
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
	v_hash := encode(sha256(convert_to(p_secret, 'UTF8')), 'hex');

	-- 1. The settings; the layout: the first claim sets it, every other
	-- must match.
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
		result := NULL;
	END IF;

	-- The registry's own server, where it issues IDs under the registry's
	-- layout: the node it issues under is granted to no member (5. below),
	-- and its row keeps that node from them for max_lease after it last
	-- issued under it, so that a restart of that server under another
	-- snowid.node_id does not free the old node at once.  The row is
	-- written only when missing, taken from a holder gone, or past half
	-- its lease, and never waited for (another claim writes it then).
	SELECT h.* INTO v_host FROM @extschema@.snowid_registry_host() h;
	IF v_host.layout = v_set.layout THEN
		v_host_node := v_host.node_id;
		v_host_below := v_host.issued_below;
	END IF;
	IF v_host_node IS NOT NULL THEN
		SELECT n AS r, n.xmin::text AS x INTO v_pair
		  FROM @extschema@.snowid_registry_node n WHERE n.node_id = v_host_node;
		IF FOUND THEN
			v_row := v_pair.r;
			v_xmin := v_pair.x;
		ELSE
			v_row := NULL;
			v_xmin := NULL;
		END IF;
		v_live := coalesce(v_row.released_at IS NULL AND v_row.lease_until >= v_now, false);
		-- (a member's live lease is not overwritten: its next claim is
		-- refused, and the row is taken once that lease is over)
		IF v_row.node_id IS NULL OR NOT v_live OR
		   (v_row.registry_host AND
			(v_row.lease_until < v_now + v_set.max_lease / 2 OR
			 v_row.start_id IS DISTINCT FROM v_host.start_id)) THEN
			BEGIN
				IF v_row.node_id IS NULL THEN
					INSERT INTO @extschema@.snowid_registry_node
						(node_id, cluster_name, host, port, system_identifier, start_id,
						 layout, claimed_at, last_seen, lease_until, released_at, last_id,
						 holder_role, secret_hash, max_lead_ms, floor_until, registry_host)
					VALUES (v_host_node, v_host.cluster_name, v_host.host, v_host.port,
							v_host.system_identifier, v_host.start_id, v_set.layout,
							v_now, v_now, v_now + v_set.max_lease, NULL, v_host_below,
							NULL, NULL, v_host.max_lead_ms, NULL, true);
				ELSE
					PERFORM FROM @extschema@.snowid_registry_node n
					  WHERE n.node_id = v_host_node AND n.xmin::text = v_xmin
					  FOR UPDATE NOWAIT;
					IF NOT FOUND THEN
						RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
					END IF;
					-- a holder gone (a member, or this server under an
					-- earlier lease ended by hand) leaves its floor
					UPDATE @extschema@.snowid_registry_node n
					   SET cluster_name = v_host.cluster_name, host = v_host.host,
						   port = v_host.port, system_identifier = v_host.system_identifier,
						   start_id = v_host.start_id, layout = v_set.layout,
						   claimed_at = CASE WHEN v_live AND n.start_id = v_host.start_id
											 THEN n.claimed_at ELSE v_now END,
						   last_seen = v_now, lease_until = v_now + v_set.max_lease,
						   released_at = NULL,
						   last_id = greatest(n.last_id, v_host_below),
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
					 WHERE n.node_id = v_host_node;
				END IF;
			EXCEPTION WHEN lock_not_available OR unique_violation THEN
				NULL;		-- being written: the node stays out all the same
			END;
		END IF;
	END IF;

	WHILE result IS NULL LOOP
		-- 4. No node named (or the named one is taken and was assigned
		-- automatically): the node this start already holds (its reply
		-- was lost), else the lowest free one.
		IF v_target IS NULL THEN
			SELECT min(n.node_id) INTO v_target
			  FROM @extschema@.snowid_registry_node n
			 WHERE n.start_id = p_start_id AND n.holder_role = v_role
			   AND n.secret_hash = v_hash AND n.released_at IS NULL
			   AND n.lease_until >= v_now AND n.node_id <= p_max_node
			   AND n.node_id <> ALL (v_exclude);
		END IF;
		IF v_target IS NULL THEN
			-- The lowest free node is 0 or one above a node that is not.
			WITH held AS (
				SELECT n.node_id AS node
				  FROM @extschema@.snowid_registry_node n
				 WHERE n.released_at IS NULL AND n.lease_until >= v_now
				UNION ALL
				SELECT unnest(v_exclude)
				UNION ALL
				SELECT v_host_node WHERE v_host_node IS NOT NULL)
			SELECT min(c.node) INTO v_target
			  FROM (SELECT 0 AS node
					UNION ALL
					SELECT h.node + 1 FROM held h) c
			 WHERE c.node <= p_max_node
			   AND NOT EXISTS (SELECT FROM held h WHERE h.node = c.node);
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
		-- conflict holds nothing).
		SELECT n AS r, n.xmin::text AS x INTO v_pair
		  FROM @extschema@.snowid_registry_node n WHERE n.node_id = v_target;
		IF FOUND THEN
			v_row := v_pair.r;
			v_xmin := v_pair.x;
		ELSE
			v_row := NULL;
			v_xmin := NULL;
		END IF;

		result := 'ok';
		node_id := v_target;
		lease_ms := v_lease_ms;
		holder := NULL;
		detail := NULL;
		floor_id := NULL;
		floor_until := NULL;

		-- a row of the registry's own server: no member renews it or
		-- takes it over
		v_hosted := coalesce(v_row.registry_host, false);
		-- a renewal by the holder (a lease of 1.4, bound to no role yet, is
		-- bound to the role and secret of its own start's first renewal)
		v_own := NOT v_hosted AND coalesce(v_row.node_id IS NOT NULL AND
			v_row.start_id = p_start_id AND v_row.released_at IS NULL AND
			((v_row.holder_role = v_role AND v_row.secret_hash = v_hash) OR
			 (v_row.holder_role IS NULL AND v_row.secret_hash IS NULL AND
			  v_row.system_identifier = p_system_identifier)), false);
		-- the same server after a crash, or its promoted standby, under the
		-- same role (a lease of 1.4: its own next start only)
		v_successor := NOT v_hosted AND coalesce(v_row.node_id IS NOT NULL AND NOT v_own AND
			v_row.system_identifier = p_system_identifier AND
			((v_row.holder_role = v_role AND
			  (v_row.start_id = p_predecessor OR p_promoted)) OR
			 (v_row.holder_role IS NULL AND v_row.start_id = p_predecessor)), false);
		-- what the row keeps for later holders: every ID of the holders so
		-- far lies below it (the holder's own lease end counts only once it
		-- has released the node or its lease has run out)
		v_floor := v_row.floor_until;

		IF v_target = v_host_node THEN
			-- the registry's own server issues IDs under it now (an
			-- assigned node moves, even its holder's successor's)
			result := 'conflict';
			lease_ms := NULL;
			v_successor := false;
			SELECT v.holder INTO holder
			  FROM @extschema@.snowid_registry_nodes v
			 WHERE v.node_id = v_target AND v.registry_host;
			holder := coalesce(holder, 'the registry''s own server');
			detail := format('the registry''s own server issues IDs as node %s (its snowid.node_id), which the registry grants no other server: give this server another snowid.node_id, or leave it unset to have the registry assign a free one',
							 v_target);
		ELSIF NOT v_own AND NOT v_successor AND
			  (v_row.node_id IS NULL OR v_row.released_at IS NOT NULL OR
			   v_row.lease_until < v_now) AND
			  current_setting('snowid_registry.reasserting', true) IS DISTINCT FROM
				  format('%s %s', v_target, p_start_id) AND
			  @extschema@.snowid_registry_recovering() IS NOT NULL THEN
			-- a registry that may have forgotten grants no new holder
			-- until every live one has had time to re-assert its lease
			-- (snowid_registry_reassert)
			result := 'conflict';
			node_id := coalesce(p_node_id, v_target);
			lease_ms := NULL;
			detail := coalesce(@extschema@.snowid_registry_recovering(),
							   'the registry may have forgotten its leases');
			RETURN NEXT;
			RETURN;
		ELSIF v_row.node_id IS NULL THEN
			NULL;			-- never claimed
		ELSIF v_own THEN
			NULL;
		ELSIF v_row.released_at IS NOT NULL OR v_row.lease_until < v_now THEN
			-- released or run out: the new holder stays above the old
			-- holders' last ID, and above the end of their leases plus what
			-- they could issue ahead of their clocks (their max_lead)
			-- (the registry's own server, issuing under it no more, may
			-- have done so until its current start)
			v_floor := greatest(v_row.floor_until,
								coalesce(v_row.released_at, v_row.lease_until) +
								coalesce(v_row.max_lead_ms, 0) * interval '1 ms',
								CASE WHEN v_hosted
									 THEN pg_catalog.pg_postmaster_start_time() +
										  coalesce(v_row.max_lead_ms, 0) * interval '1 ms'
								END);
			floor_id := v_row.last_id;
			floor_until := v_floor;
			detail := CASE WHEN v_hosted
						   THEN 'kept for the registry''s own server, which issues IDs under it no more, until its lease ran out'
						   WHEN v_row.released_at IS NOT NULL
						   THEN 'released by its holder'
						   ELSE 'the lease of its holder had run out'
					  END;
		ELSIF v_successor AND
			  v_row.last_seen <= v_now - v_takeover_ms * interval '1 ms' THEN
			-- whose own high-water mark covers what the old holder issued
			floor_id := v_row.last_id;
			floor_until := v_row.floor_until;
			detail := 'took over from an earlier start of this server';
		ELSE
			result := 'conflict';
			lease_ms := NULL;
			SELECT v.holder INTO holder
			  FROM @extschema@.snowid_registry_nodes v WHERE v.node_id = v_target;
			detail := format('node %s is held by %s, last seen %s s ago, lease until %s; ',
							 v_target, holder,
							 round(EXTRACT(epoch FROM v_now - v_row.last_seen), 1),
							 v_row.lease_until) ||
				CASE WHEN v_hosted
					 THEN 'the registry''s own server issued IDs under it: it is kept from other servers until its lease runs out (or is ended by hand once that server is known never to issue under it again)'
					 WHEN v_row.start_id = p_start_id
					 THEN 'this claim names the holder''s start but not its login role and secret'
					 WHEN v_successor
					 THEN format('a server with the same system identifier (a restart or a promoted standby) under the same login role may take it over only after its holder has been silent for %s s',
								 trim_scale(v_takeover_ms / 1000.0))
					 WHEN v_row.holder_role <> v_role
					 THEN 'it is held under another login role; it is free again once its holder releases it or its lease runs out'
					 WHEN v_row.system_identifier = p_system_identifier
					 THEN 'this server has the same system identifier but neither held the node before nor was promoted from a standby: a copy of the holder, such as a clone made with pg_basebackup'
					 ELSE 'it is free again once its holder releases it or its lease runs out'
				END;
		END IF;

		IF result = 'ok' AND NOT v_own AND v_host_below IS NOT NULL THEN
			-- a new holder also stays above every ID the registry's own
			-- server has issued, under whichever node
			floor_id := greatest(floor_id, v_host_below);
		END IF;

		IF result = 'ok' AND NOT v_own THEN
			-- 6. A new holder: within the role's share of the nodes.
			SELECT count(*) INTO v_held
			  FROM @extschema@.snowid_registry_node n
			 WHERE n.holder_role = v_role AND n.released_at IS NULL
			   AND n.lease_until >= v_now AND n.node_id <> v_target;
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
			-- 7. Write the row: locked without waiting, and only as it was
			-- read (a row changed meanwhile, or held by a transaction still
			-- open, is busy).
			BEGIN
				IF v_row.node_id IS NULL THEN
					INSERT INTO @extschema@.snowid_registry_node
						(node_id, cluster_name, host, port, system_identifier, start_id,
						 layout, claimed_at, last_seen, lease_until, released_at, last_id,
						 holder_role, secret_hash, max_lead_ms, floor_until)
					VALUES (v_target, p_cluster_name, p_host, p_port, p_system_identifier,
							p_start_id, p_layout, v_now, v_now, v_until, NULL, p_last_id,
							v_role, v_hash, p_max_lead_ms, NULL);
				ELSE
					PERFORM FROM @extschema@.snowid_registry_node n
					  WHERE n.node_id = v_target AND n.xmin::text = v_xmin
					  FOR UPDATE NOWAIT;
					IF NOT FOUND THEN
						RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
					END IF;
					UPDATE @extschema@.snowid_registry_node n
					   SET cluster_name = p_cluster_name, host = p_host, port = p_port,
						   system_identifier = p_system_identifier, start_id = p_start_id,
						   layout = p_layout,
						   claimed_at = CASE WHEN v_own THEN n.claimed_at ELSE v_now END,
						   last_seen = v_now, lease_until = v_until, released_at = NULL,
						   last_id = greatest(n.last_id, p_last_id),
						   holder_role = v_role, secret_hash = v_hash,
						   max_lead_ms = CASE WHEN v_own
											  THEN greatest(n.max_lead_ms, p_max_lead_ms)
											  ELSE p_max_lead_ms END,
						   floor_until = v_floor, registry_host = false
					 WHERE n.node_id = v_target;
				END IF;
			EXCEPTION WHEN lock_not_available OR unique_violation THEN
				-- another transaction wrote the row and is still open, or
				-- did meanwhile: a node of this server's own is not given
				-- up for it, nor one named, nor more than a few assigned
				-- ones (an error: the member keeps its lease and asks again)
				v_busy := v_busy + 1;
				IF v_own OR v_successor OR p_auto IS NOT TRUE OR v_busy > 3 THEN
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
			   v_successor IS NOT TRUE THEN
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
