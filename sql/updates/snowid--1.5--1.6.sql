/* snowid--1.5--1.6.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.6'" to load this file. \quit

-- 1.6: snowid on Citus (issue 23).

-- snowid_ticket_next(text): the ticket named by text and looked up in the caller's
-- search_path when a value is taken (as nextval('name'::text)): a default
-- written snowid_ticket_next('name') resolves here (an unknown literal
-- prefers text) and depends on no sequence, so that Citus, which rewrites
-- a default that depends on a sequence into nextval() on its workers,
-- copies it to every node as it is.
CREATE FUNCTION snowid_ticket_next(ticket text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_ticket_next_named'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_ticket_next(text) IS
'next value of the ticket sequence of that name in the search_path, for this server''s shard (needs USAGE or UPDATE on it); a default written with it depends on no sequence';

-- Whoever may take values with snowid_ticket_next(regclass) may with the
-- text form, and no one else: its privileges are copied (an EXECUTE
-- revoked from PUBLIC stays revoked; the grantor of each grant becomes the
-- role running the update).  They are not the function's initial
-- privileges, which pg_dump leaves out: as after CREATE EXTENSION, it has
-- none recorded, so that pg_dump keeps the copy.
DO $$
DECLARE
	v_fn pg_catalog.regprocedure :=
		'@extschema@.snowid_ticket_next(pg_catalog.text)'::pg_catalog.regprocedure;
	v_acl pg_catalog.aclitem[];
	v_grant record;
BEGIN
	SELECT p.proacl INTO v_acl FROM pg_catalog.pg_proc p
	 WHERE p.oid OPERATOR(pg_catalog.=)
		   '@extschema@.snowid_ticket_next(pg_catalog.regclass)'::pg_catalog.regprocedure;
	IF v_acl IS NULL THEN
		RETURN;					-- the default privileges, as the new one's
	END IF;
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
	FOR v_grant IN
		SELECT a.grantee, a.is_grantable FROM pg_catalog.aclexplode(v_acl) a
		 WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_fn,
			CASE WHEN v_grant.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grant.grantee)) END,
			CASE WHEN v_grant.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
	DELETE FROM pg_catalog.pg_init_privs i
	 WHERE i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
	   AND i.objoid OPERATOR(pg_catalog.=) v_fn
	   AND i.objsubid OPERATOR(pg_catalog.=) 0;
END
$$;

-- The registry on a server that issues IDs itself (item 4): the node that
-- server issues under is never granted to a member; a row of the node
-- table marks it as held by the registry's own server.
ALTER TABLE snowid_registry_node
	ADD COLUMN registry_host boolean NOT NULL DEFAULT false;

COMMENT ON TABLE snowid_registry_node IS
'registry: one row per node ID ever claimed: its holder, the lease and the last ID reported (written by snowid_registry_claim and snowid_registry_release); a row with registry_host is the node the registry''s own server issues IDs under, kept from members for max_lease after it last did';

-- Only pg_catalog's operators and functions: the view is bound when it is
-- created (by CREATE EXTENSION or an update), whatever lies on the
-- search_path then.  The holders' hosts and ports show to pg_monitor.
CREATE OR REPLACE VIEW snowid_registry_nodes AS
SELECT n.node_id,
	   pg_catalog.concat(
		   CASE WHEN n.registry_host THEN 'the registry''s own server: ' END,
		   CASE WHEN n.cluster_name OPERATOR(pg_catalog.<>) ''
				THEN pg_catalog.format('cluster "%s" on ', n.cluster_name) END,
		   pg_catalog.format('%s:%s, system identifier %s',
							 n.host, n.port, n.system_identifier)) AS holder,
	   n.layout,
	   n.lease_until,
	   n.last_seen,
	   CASE WHEN n.released_at IS NOT NULL THEN 'released'
			WHEN n.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() THEN 'expired'
			ELSE 'held' END AS state,
	   n.cluster_name,
	   n.host,
	   n.port,
	   n.system_identifier,
	   n.start_id,
	   n.claimed_at,
	   n.last_id,
	   n.holder_role,
	   n.max_lead_ms,
	   n.registry_host
  FROM snowid_registry_node n;

COMMENT ON VIEW snowid_registry_nodes IS
'registry: every node ID claimed, who holds it (or held it last), its layout, lease and state (held, released or expired), and whether the holder is the registry''s own server';

-- The server that hosts this registry database may issue IDs itself (a
-- Citus coordinator, say) under its snowid.node_id; it cannot be a member
-- of a registry of its own.  The claims ask this function for the node it
-- issues under now, to grant it to no member, and for a bound above every
-- ID it has issued, for members to stay above.
CREATE FUNCTION snowid_registry_host(OUT layout text,
									 OUT node_id integer,
									 OUT max_lead_ms bigint,
									 OUT issued_below bigint,
									 OUT start_id text,
									 OUT cluster_name text,
									 OUT host text,
									 OUT port integer,
									 OUT system_identifier numeric)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_registry_host'
LANGUAGE C VOLATILE;

REVOKE ALL ON FUNCTION snowid_registry_host() FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_host() IS
'registry, internal: this server as the host of the registry: the layout and node it issues IDs under now (NULL while it issues none, or where snowid is not preloaded), its max_lead, a bound above every ID it has issued, its start and its identity as a member would send it';

-- A member's claim of a node ID, or the renewal of its lease: one call, one
-- transaction, that waits for no other: the decision is taken on the rows
-- as they stand, and the one row it writes is locked without waiting (a
-- row another transaction still holds is passed over, or answered as
-- busy), so that a session that keeps its transaction open after a claim
-- holds the row of its own node only, and one that got a conflict holds
-- nothing.  No advisory lock: any role may take those.  The registry
-- decides the lease (at most max_lease), the takeover delay (at least
-- takeover_delay) and how many nodes one login role holds.  The rules, in
-- order: the layout must be the registry's and its node bits must give
-- p_max_node; a lease must outlast the member's max_lead by lead_margin; a
-- node is granted when it has no row, when its holder is this very start
-- with the same role and secret (a renewal), when it was released or its
-- lease ran out (floor_id and floor_until tell the new holder what to stay
-- above: the last ID reported, and the latest lease end plus max_lead of
-- every earlier holder), or when the holder is this server's own earlier
-- start or the primary it was promoted from, under the same login role,
-- and has been silent for the takeover delay.  Otherwise it is a conflict
-- naming the holder, unless the node was assigned automatically (p_auto):
-- then another free node is granted.  The node the registry's own server
-- issues IDs under (snowid_registry_host, in the registry's layout) is
-- never granted: its row, held by that server, keeps it from members for
-- max_lease after that server last issued under it, and every new holder
-- of any node starts above every ID that server has issued.
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
