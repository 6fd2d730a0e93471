/* snowid--1.4--1.5.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.5'" to load this file. \quit

-- 1.5: the registry trusts no caller (issue 22).  Leases belong to the
-- login role that took them, the registry decides lease lengths, takeover
-- delays and range sizes, members verify every answer, and no credential
-- is shown.

-- The functions of snowid name their tables and each other by the schema
-- they were installed in, as every extension's do: renamed, that name
-- would lead them to whatever bears it then.  Whoever owns the schema (in
-- a registry database installed in public, its owner, not a superuser)
-- could rename it and plant tables or functions under the old name, so a
-- rename of the extension's schema is refused.  The trigger calls its
-- function by OID, not by name.
CREATE FUNCTION snowid_schema_renamed()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.pg_extension e
				WHERE e.extname OPERATOR(pg_catalog.=) 'snowid'
				  AND NOT EXISTS (SELECT FROM pg_catalog.pg_namespace n
								   WHERE n.oid OPERATOR(pg_catalog.=) e.extnamespace
									 AND n.nspname OPERATOR(pg_catalog.=) '@extschema@')) THEN
		RAISE EXCEPTION 'the schema of the snowid extension cannot be renamed'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'The functions of snowid name their tables by the schema "@extschema@": renamed, they would read and write whatever bore that name.',
				  HINT = 'Leave the schema its name; to move snowid, drop and create the extension again.';
	END IF;
END
$$;

REVOKE ALL ON FUNCTION snowid_schema_renamed() FROM PUBLIC;

COMMENT ON FUNCTION snowid_schema_renamed() IS
'event trigger on ALTER SCHEMA: refuses a rename of the schema snowid is installed in, whose name its functions use';

CREATE EVENT TRIGGER snowid_schema_renamed ON ddl_command_end
WHEN TAG IN ('ALTER SCHEMA')
EXECUTE FUNCTION snowid_schema_renamed();

-- The registry's limits on every member (issue 22).
ALTER TABLE snowid_registry_settings
	ADD COLUMN max_lease interval NOT NULL DEFAULT '7 days'
		CHECK (max_lease OPERATOR(pg_catalog.>=) '1 second'::pg_catalog.interval),
	ADD COLUMN takeover_delay interval NOT NULL DEFAULT '5 seconds'
		CHECK (takeover_delay OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval),
	ADD COLUMN max_nodes_per_role integer NOT NULL DEFAULT 64
		CHECK (max_nodes_per_role OPERATOR(pg_catalog.>=) 1),
	ADD COLUMN max_grant_share double precision NOT NULL DEFAULT 0.01
		CHECK (max_grant_share OPERATOR(pg_catalog.>) 0 AND
			   max_grant_share OPERATOR(pg_catalog.<=) 0.25),
	ADD COLUMN lead_margin interval NOT NULL DEFAULT '1 second'
		CHECK (lead_margin OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval),
	ADD COLUMN max_grants_per_hour integer NOT NULL DEFAULT 60
		CHECK (max_grants_per_hour OPERATOR(pg_catalog.>=) 1);

COMMENT ON TABLE snowid_registry_settings IS
'registry: the one layout every member must use (set by the first claim; a member with another layout is refused) and the limits the registry sets on every member: longest lease, shortest takeover delay, nodes per login role, largest share of a pool one grant takes, margin of a lease over a member''s max_lead, grants of a pool to one role in an hour';

-- Leases belong to the login role that took them, and to the secret of the
-- start that took them.  A lease of 1.4 has neither: its start's first
-- renewal binds it to that start's role and secret.
ALTER TABLE snowid_registry_node
	ADD COLUMN holder_role name,
	ADD COLUMN secret_hash text,
	ADD COLUMN max_lead_ms bigint,
	ADD COLUMN floor_until timestamptz;

-- Ranges belong to the start they were granted to (and its role): only
-- that start gives one back.  NULL for ranges of 1.4.
ALTER TABLE snowid_pool_range
	ADD COLUMN start_id text,
	ADD COLUMN holder_role name;

CREATE OR REPLACE VIEW snowid_registry_nodes AS
SELECT n.node_id,
	   pg_catalog.concat(
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
	   n.max_lead_ms
  FROM snowid_registry_node n;

-- The calls take the start's secret: new signatures.  The roles that may
-- execute the old ones (the members' group role) may execute the new ones:
-- remembered here, granted below.
SELECT pg_catalog.set_config('snowid_upgrade.grantees',
	   coalesce((SELECT pg_catalog.string_agg(DISTINCT pg_catalog.quote_ident(r.rolname), ',')
				   FROM pg_catalog.pg_proc p
				  CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
				   JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
				  WHERE p.oid OPERATOR(pg_catalog.=) ANY (ARRAY[
						'@extschema@.snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, boolean, bigint, bigint, bigint)'::pg_catalog.regprocedure,
						'@extschema@.snowid_pool_grant(text, integer, numeric, text, text, bigint, bigint[], bigint[])'::pg_catalog.regprocedure])
					AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
					AND a.grantee OPERATOR(pg_catalog.<>) p.proowner), ''),
	   true);

DROP FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, boolean, bigint, bigint, bigint);
DROP FUNCTION snowid_registry_release(integer, text, bigint);
DROP FUNCTION snowid_pool_grant(text, integer, numeric, text, text, bigint, bigint[], bigint[]);
DROP FUNCTION snowid_pool_report(integer, numeric, text, text[], bigint[], bigint[]);
DROP FUNCTION snowid_pool_return(text, integer, numeric, text, bigint, bigint);

-- Does this caller hold node p_node_id under a live lease: the same start,
-- the same login role (session_user: a SECURITY DEFINER function cannot
-- change it) and the start's secret, of which the registry keeps only a
-- SHA-256?  Every call that acts on a lease asks it.
CREATE FUNCTION snowid_registry_holds(p_node_id integer,
									  p_system_identifier numeric,
									  p_start_id text,
									  p_secret text)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT EXISTS (
	SELECT FROM @extschema@.snowid_registry_node n
	 WHERE n.node_id = $1
	   AND n.system_identifier = $2
	   AND n.start_id = $3
	   AND n.holder_role = pg_catalog.session_user()
	   AND n.secret_hash = pg_catalog.encode(pg_catalog.sha256(
			   pg_catalog.convert_to(coalesce($4, ''), 'UTF8')), 'hex')
	   AND n.released_at IS NULL
	   AND n.lease_until > pg_catalog.clock_timestamp())
$$;

REVOKE ALL ON FUNCTION snowid_registry_holds(integer, numeric, text, text) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_holds(integer, numeric, text, text) IS
'registry, internal: whether the calling login role holds the node under a live lease with this start and its secret';

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
-- then another free node is granted.
CREATE FUNCTION snowid_registry_claim(p_node_id integer,
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
				SELECT unnest(v_exclude))
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

		-- a renewal by the holder (a lease of 1.4, bound to no role yet, is
		-- bound to the role and secret of its own start's first renewal)
		v_own := coalesce(v_row.node_id IS NOT NULL AND
			v_row.start_id = p_start_id AND v_row.released_at IS NULL AND
			((v_row.holder_role = v_role AND v_row.secret_hash = v_hash) OR
			 (v_row.holder_role IS NULL AND v_row.secret_hash IS NULL AND
			  v_row.system_identifier = p_system_identifier)), false);
		-- the same server after a crash, or its promoted standby, under the
		-- same role (a lease of 1.4: its own next start only)
		v_successor := coalesce(v_row.node_id IS NOT NULL AND NOT v_own AND
			v_row.system_identifier = p_system_identifier AND
			((v_row.holder_role = v_role AND
			  (v_row.start_id = p_predecessor OR p_promoted)) OR
			 (v_row.holder_role IS NULL AND v_row.start_id = p_predecessor)), false);
		-- what the row keeps for later holders: every ID of the holders so
		-- far lies below it (the holder's own lease end counts only once it
		-- has released the node or its lease has run out)
		v_floor := v_row.floor_until;

		IF v_row.node_id IS NULL THEN
			NULL;			-- never claimed
		ELSIF v_own THEN
			NULL;
		ELSIF v_row.released_at IS NOT NULL OR v_row.lease_until < v_now THEN
			-- released or run out: the new holder stays above the old
			-- holders' last ID, and above the end of their leases plus what
			-- they could issue ahead of their clocks (their max_lead)
			v_floor := greatest(v_row.floor_until,
								coalesce(v_row.released_at, v_row.lease_until) +
								coalesce(v_row.max_lead_ms, 0) * interval '1 ms');
			floor_id := v_row.last_id;
			floor_until := v_floor;
			detail := CASE WHEN v_row.released_at IS NOT NULL
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
				CASE WHEN v_row.start_id = p_start_id
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
						   floor_until = v_floor
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

REVOKE ALL ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) IS
'registry, internal: claims or renews a node ID lease for a member''s login role and start (called by its background worker); ok with the node, the lease the registry grants and the floor to stay above, or conflict naming the holder';

-- A clean shutdown of the holder ends its lease at once.  The row is
-- written only if no other transaction holds it (never waited for); what
-- the next holder must stay above is kept: the latest time any holder
-- could have issued an ID at.
CREATE FUNCTION snowid_registry_release(p_node_id integer, p_start_id text,
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
BEGIN
	PERFORM FROM @extschema@.snowid_registry_node n
	  WHERE n.node_id = p_node_id AND n.start_id = p_start_id
		AND n.holder_role = pg_catalog.session_user()
		AND n.secret_hash = encode(sha256(convert_to(coalesce(p_secret, ''), 'UTF8')), 'hex')
		AND n.released_at IS NULL
	  FOR UPDATE NOWAIT;
	IF NOT FOUND THEN
		RETURN false;
	END IF;
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

-- A member's report of the ranges it holds (as granted): each one inside
-- its pool's values that no range row covers is recorded, and nothing up
-- to its end is granted again.  Pools are taken in name order, so that two
-- reports never wait for each other's pool rows in a cycle.
CREATE FUNCTION snowid_pool_report(p_node_id integer,
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
	SELECT s.max_grant_share INTO v_share FROM @extschema@.snowid_registry_settings s;
	v_share := coalesce(v_share, 0.01);

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
			-- finds the pool row locked (a pool row held by a transaction
			-- still open makes the report fail at once, to be sent again)
			PERFORM FROM @extschema@.snowid_pool p WHERE p.name = v_h.pool
			  FOR UPDATE NOWAIT;
			UPDATE @extschema@.snowid_pool p SET next_value = v_after
			 WHERE p.name = v_h.pool AND p.next_value <= v_h.hi;
		END IF;
		INSERT INTO @extschema@.snowid_pool_range AS r
			(pool, node_id, holder, system_identifier, request, first_value,
			 last_value, granted_at, returned_from, reported, start_id, holder_role)
		VALUES (v_h.pool, p_node_id, v_holder, p_system_identifier,
				'reported:' || v_h.lo, v_h.lo, v_h.hi, v_now, NULL, true,
				p_start_id, pg_catalog.session_user())
		ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_rows = ROW_COUNT;
		v_count := v_count + v_rows;
	END LOOP;
	RETURN v_count;
END
$$;

REVOKE ALL ON FUNCTION snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[]) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[]) IS
'registry, internal: records the ranges the live holder of a node (its login role, start and secret) holds that the registry does not know (a grant lost in a failover), so that they are never granted again; returns the number recorded';

-- A grant to a member's worker, in the order of the contract: an unknown
-- pool, a caller without the live lease of its node, the member's held
-- ranges recorded, a repeated request, the facts only (want 0), then a new
-- range: the lowest values never granted, want of them while at least four
-- times as many are left, near the end a quarter of what is left (at least
-- 64) so that several members share the end and all of it is used.
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

-- A member's clean shutdown gives back the unused tail [unused_from,
-- last_value] of the range holding p_first_value, if no grant came after it; a tail given back
-- whole makes way for the next grant from the same first value.
CREATE FUNCTION snowid_pool_return(p_pool text,
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
		SELECT p.* INTO v_pool FROM @extschema@.snowid_pool p WHERE p.name = p_pool
		  FOR UPDATE NOWAIT;
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

REVOKE ALL ON FUNCTION snowid_pool_return(text, integer, numeric, text, text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_pool_return(text, integer, numeric, text, text, bigint, bigint) IS
'registry, internal: takes back the unused tail of a range of the live holder of its node (its login role, start and secret) at its clean shutdown: returned, kept (a later grant came after it, or the caller does not hold the node) or unknown';

-- The grants of the old calls, on the new ones.
DO $$
DECLARE
	v_role text;
BEGIN
	FOREACH v_role IN ARRAY pg_catalog.string_to_array(
			pg_catalog.current_setting('snowid_upgrade.grantees'), ',')
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s, %s, %s, %s, %s TO %s',
			'@extschema@.snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint)',
			'@extschema@.snowid_registry_release(integer, text, text, bigint)',
			'@extschema@.snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])',
			'@extschema@.snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[])',
			'@extschema@.snowid_pool_return(text, integer, numeric, text, text, bigint, bigint)',
			v_role);
	END LOOP;
END
$$;

-- Pools clean up after themselves (issue 22, item 9): a pool that could
-- never serve (a start below 1) is refused at creation, ...

CREATE OR REPLACE FUNCTION snowid_pool_create(name text,
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

-- ... and snowid_pool_holdings() counts the registry's answers that
-- granted nothing usable (failures).
DROP FUNCTION snowid_pool_holdings();

CREATE FUNCTION snowid_pool_holdings(OUT pool text,
									 OUT type regtype,
									 OUT state text,
									 OUT first_value bigint,
									 OUT last_value bigint,
									 OUT next_value bigint,
									 OUT values_in_hand bigint,
									 OUT ranges integer,
									 OUT rate numeric,
									 OUT time_left interval,
									 OUT detail text,
									 OUT failures bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowid_pool_holdings'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_pool_holdings() IS
'the ranges of registry pools this server holds: the current range, the next value, the values in hand, the rate they are taken at (smoothed, half-life one minute), the time they last at it, and the registry''s answers that granted nothing usable';
