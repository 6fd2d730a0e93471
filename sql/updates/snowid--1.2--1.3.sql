/* snowid--1.2--1.3.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.3'" to load this file. \quit

-- The registry (issue 12): a database with snowid installed that members
-- name in snowid.registry.  Their background workers claim node IDs here
-- for a lease, through snowid_registry_claim and snowid_registry_release;
-- nothing here needs snowid preloaded.  Both tables are dumped by pg_dump
-- with their rows, so a restored registry keeps its leases.

CREATE TABLE snowid_registry_settings (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	layout text			-- the layout every member must use; set by the first claim
);

COMMENT ON TABLE snowid_registry_settings IS
'registry: the one layout every member must use (set by the first claim; a member with another layout is refused)';

SELECT pg_catalog.pg_extension_config_dump('snowid_registry_settings', '');

CREATE TABLE snowid_registry_node (
	node_id integer PRIMARY KEY CHECK (node_id OPERATOR(pg_catalog.>=) 0),
	cluster_name text,
	host text,
	port integer,
	system_identifier numeric(20,0),	-- of the holder's cluster (uint64)
	start_id text NOT NULL,				-- per-start identity of the holder
	layout text NOT NULL,
	claimed_at timestamptz NOT NULL,	-- when this holder (start_id) got it
	last_seen timestamptz NOT NULL,		-- last claim or renewal by the holder
	lease_until timestamptz NOT NULL,
	released_at timestamptz,			-- clean release (lease_until = released_at)
	last_id bigint						-- every ID issued on the node is below
										-- it (reported); NULL if none reported
);

COMMENT ON TABLE snowid_registry_node IS
'registry: one row per node ID ever claimed: its holder, the lease and the last ID reported (written by snowid_registry_claim and snowid_registry_release)';

SELECT pg_catalog.pg_extension_config_dump('snowid_registry_node', '');

-- Only pg_catalog's operators and functions: the view is bound when it is
-- created (by CREATE EXTENSION or an update), whatever lies on the
-- search_path then.  The holders' hosts and ports show to pg_monitor.
CREATE VIEW snowid_registry_nodes AS
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
	   n.last_id
  FROM snowid_registry_node n;

COMMENT ON VIEW snowid_registry_nodes IS
'registry: every node ID claimed, who holds it (or held it last), its layout, lease and state (held, released or expired)';

REVOKE ALL ON snowid_registry_nodes FROM PUBLIC;
GRANT SELECT ON snowid_registry_nodes TO pg_monitor;
-- pg_dump of a database with snowid copies the rows of both tables: its
-- owner may read them, as it may read snowid_ticket.
GRANT SELECT ON snowid_registry_node, snowid_registry_settings TO pg_database_owner;
GRANT SELECT ON snowid_registry_nodes TO pg_database_owner;

-- A member's claim of a node ID, or the renewal of its lease: one call, one
-- transaction, serialised with every other claim by the table lock (claims
-- are rare: one per member and heartbeat).  The rules, in order: the layout
-- must be the registry's; a node is granted when it has no row, when its
-- holder is this very start (a renewal), when it was released or its lease
-- ran out (floor_id and floor_until tell the new holder what to stay
-- above), or when the holder is this server's own earlier start or the
-- primary it was promoted from and has been silent for p_takeover_ms.
-- Otherwise it is a conflict naming the holder, unless the node was
-- assigned automatically (p_auto): then another free node is granted.
CREATE FUNCTION snowid_registry_claim(p_node_id integer,
									  p_auto boolean,
									  p_max_node integer,
									  p_layout text,
									  p_cluster_name text,
									  p_host text,
									  p_port integer,
									  p_system_identifier numeric,
									  p_start_id text,
									  p_predecessor text,
									  p_promoted boolean,
									  p_lease_ms bigint,
									  p_takeover_ms bigint,
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
ROWS 1
AS $$
DECLARE
	v_now timestamptz := pg_catalog.now();
	v_until timestamptz;
	v_layout text;
	v_target integer := p_node_id;
	v_exclude integer;
	v_row @extschema@.snowid_registry_node;
	v_successor boolean;
BEGIN
	IF p_max_node IS NULL OR p_max_node < 0 THEN
		RAISE EXCEPTION 'invalid highest node ID: %', coalesce(p_max_node::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p_layout IS NULL OR p_start_id IS NULL THEN
		RAISE EXCEPTION 'a claim needs a layout and a start identity'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF p_lease_ms IS NULL OR p_lease_ms <= 0 OR
	   p_takeover_ms IS NULL OR p_takeover_ms < 0 THEN
		RAISE EXCEPTION 'invalid lease of % ms or takeover time of % ms',
			coalesce(p_lease_ms::text, 'NULL'), coalesce(p_takeover_ms::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The lease must be positive, the takeover time zero or more.';
	END IF;
	v_until := v_now + p_lease_ms * interval '1 ms';

	LOCK TABLE @extschema@.snowid_registry_node IN EXCLUSIVE MODE;

	-- 1. The layout: the first claim sets it, every other must match.
	SELECT s.layout INTO v_layout FROM @extschema@.snowid_registry_settings s;
	IF NOT FOUND THEN
		INSERT INTO @extschema@.snowid_registry_settings (only_row, layout)
		VALUES (true, p_layout);
	ELSIF v_layout IS NULL THEN
		UPDATE @extschema@.snowid_registry_settings SET layout = p_layout;
	ELSIF v_layout <> p_layout THEN
		result := 'conflict';
		node_id := p_node_id;
		lease_ms := NULL;
		holder := NULL;
		detail := format('the registry''s layout is %s; this server''s is %s',
						 v_layout, p_layout);
		floor_id := NULL;
		floor_until := NULL;
		RETURN NEXT;
		RETURN;
	END IF;

	-- 2. The node ID must exist in the layout.
	IF p_node_id < 0 OR p_node_id > p_max_node THEN
		RAISE EXCEPTION 'node ID % is out of range', p_node_id
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The layout has node IDs 0 to %s.', p_max_node);
	END IF;

	LOOP
		-- 3. No node named (or the named one is taken and was assigned
		-- automatically): the node this start already holds (its reply was
		-- lost), else the lowest free one.
		IF v_target IS NULL THEN
			SELECT min(n.node_id) INTO v_target
			  FROM @extschema@.snowid_registry_node n
			 WHERE n.start_id = p_start_id AND n.released_at IS NULL
			   AND n.lease_until >= v_now AND n.node_id <= p_max_node
			   AND n.node_id IS DISTINCT FROM v_exclude;
		END IF;
		IF v_target IS NULL THEN
			-- The lowest free node is 0 or one above a node that is not.
			WITH held AS (
				SELECT n.node_id AS node
				  FROM @extschema@.snowid_registry_node n
				 WHERE n.released_at IS NULL AND n.lease_until >= v_now
				UNION ALL
				SELECT v_exclude WHERE v_exclude IS NOT NULL)
			SELECT min(c.node) INTO v_target
			  FROM (SELECT 0 AS node
					UNION ALL
					SELECT h.node + 1 FROM held h) c
			 WHERE c.node <= p_max_node
			   AND NOT EXISTS (SELECT FROM held h WHERE h.node = c.node);
			IF v_target IS NULL AND v_exclude IS NULL THEN
				result := 'conflict';
				node_id := NULL;
				lease_ms := NULL;
				holder := NULL;
				detail := format('all %s node IDs are held', p_max_node::bigint + 1);
				floor_id := NULL;
				floor_until := NULL;
				RETURN NEXT;
				RETURN;
			ELSIF v_target IS NULL THEN
				-- nothing else is free: the conflict over the node named
				RETURN NEXT;
				RETURN;
			END IF;
		END IF;

		-- 4. The row of the target node.
		SELECT n.* INTO v_row
		  FROM @extschema@.snowid_registry_node n WHERE n.node_id = v_target;

		result := 'ok';
		node_id := v_target;
		lease_ms := p_lease_ms;
		holder := NULL;
		detail := NULL;
		floor_id := NULL;
		floor_until := NULL;

		IF NOT FOUND THEN
			INSERT INTO @extschema@.snowid_registry_node
				(node_id, cluster_name, host, port, system_identifier, start_id,
				 layout, claimed_at, last_seen, lease_until, released_at, last_id)
			VALUES (v_target, p_cluster_name, p_host, p_port, p_system_identifier,
					p_start_id, p_layout, v_now, v_now, v_until, NULL, p_last_id);
			RETURN NEXT;
			RETURN;
		END IF;

		IF v_row.start_id = p_start_id AND v_row.released_at IS NULL THEN
			-- renewal by the holder
			UPDATE @extschema@.snowid_registry_node n
			   SET cluster_name = p_cluster_name, host = p_host, port = p_port,
				   system_identifier = p_system_identifier, layout = p_layout,
				   last_seen = v_now, lease_until = v_until,
				   last_id = greatest(n.last_id, p_last_id)
			 WHERE n.node_id = v_target;
			RETURN NEXT;
			RETURN;
		END IF;

		v_successor := v_row.system_identifier = p_system_identifier AND
			(v_row.start_id = p_predecessor OR p_promoted);

		IF v_row.released_at IS NOT NULL OR v_row.lease_until < v_now THEN
			-- released or run out: the new holder stays above the old
			-- holder's last ID and the end of its lease
			floor_id := v_row.last_id;
			floor_until := coalesce(v_row.released_at, v_row.lease_until);
			detail := CASE WHEN v_row.released_at IS NOT NULL
						   THEN format('released by start %s', v_row.start_id)
						   ELSE format('the lease of start %s had run out', v_row.start_id)
					  END;
		ELSIF v_successor IS TRUE AND
			  v_row.last_seen <= v_now - p_takeover_ms * interval '1 ms' THEN
			-- the same server after a crash, or its promoted standby, whose
			-- own high-water mark covers what the old holder issued
			floor_id := v_row.last_id;
			detail := format('took over from start %s', v_row.start_id);
		ELSE
			result := 'conflict';
			lease_ms := NULL;
			SELECT v.holder INTO holder
			  FROM @extschema@.snowid_registry_nodes v WHERE v.node_id = v_target;
			detail := format('node %s is held by %s, last seen %s s ago, lease until %s; ',
							 v_target, holder,
							 round(EXTRACT(epoch FROM v_now - v_row.last_seen), 1),
							 v_row.lease_until) ||
				CASE WHEN v_successor IS TRUE
					 THEN format('a server with the same system identifier (a restart or a promoted standby) may take it over only after its holder has been silent for %s s',
								 trim_scale(p_takeover_ms / 1000.0))
					 WHEN v_row.system_identifier = p_system_identifier
					 THEN 'this server has the same system identifier but neither held the node before nor was promoted from a standby: a copy of the holder, such as a clone made with pg_basebackup'
					 ELSE 'it is free again once its holder releases it or its lease runs out'
				END;
			-- an assigned node moves to another free one, except for its own
			-- successor, which takes it back once the old start is silent
			IF p_auto IS TRUE AND v_exclude IS NULL AND v_successor IS NOT TRUE THEN
				v_exclude := v_target;
				v_target := NULL;
				CONTINUE;
			END IF;
			RETURN NEXT;
			RETURN;
		END IF;

		-- taken from another start
		UPDATE @extschema@.snowid_registry_node n
		   SET cluster_name = p_cluster_name, host = p_host, port = p_port,
			   system_identifier = p_system_identifier, start_id = p_start_id,
			   layout = p_layout, claimed_at = v_now, last_seen = v_now,
			   lease_until = v_until, released_at = NULL,
			   last_id = greatest(n.last_id, p_last_id)
		 WHERE n.node_id = v_target;
		RETURN NEXT;
		RETURN;
	END LOOP;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, boolean, bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, boolean, bigint, bigint, bigint) IS
'registry, internal: claims or renews a node ID lease for a member (called by its background worker); ok with the node and the floor to stay above, or conflict naming the holder';

-- A clean shutdown of the holder ends its lease at once.
CREATE FUNCTION snowid_registry_release(p_node_id integer, p_start_id text,
										p_last_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_now timestamptz := pg_catalog.now();
BEGIN
	UPDATE @extschema@.snowid_registry_node n
	   SET released_at = v_now, lease_until = v_now, last_seen = v_now,
		   last_id = greatest(n.last_id, p_last_id)
	 WHERE n.node_id = p_node_id AND n.start_id = p_start_id
	   AND n.released_at IS NULL;
	RETURN FOUND;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_release(integer, text, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_release(integer, text, bigint) IS
'registry, internal: ends the lease of a node ID held by the given start at once (called by a member''s background worker at a clean shutdown); false if that start does not hold it';

-- Member side: what this server's background worker knows of its lease.
CREATE FUNCTION snowid_registry_status(OUT registry text,
									   OUT state text,
									   OUT node_id integer,
									   OUT lease_until timestamptz,
									   OUT last_contact timestamptz,
									   OUT detail text)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_registry_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowid_registry_status() IS
'this server''s node lease: the registry, state (off, connecting, ok, unreachable or conflict), node ID, lease end, last contact and why';

CREATE FUNCTION snowid_registry_stats(OUT claims bigint,
									  OUT renewals bigint,
									  OUT conflicts bigint,
									  OUT outages bigint,
									  OUT failures bigint,
									  OUT releases bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_registry_stats'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowid_registry_stats() IS
'what this server''s registry worker has done since the server started: claims, renewals, conflicts, outages, failed attempts and releases';
