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

-- The owner of the extension's schema (in a registry installed in public,
-- the database's owner) could drop the schema with the extension in it,
-- and the registry would forget every lease.  A DROP SCHEMA, DROP
-- EXTENSION or DROP OWNED that would drop snowid or its schema is refused
-- unless a superuser runs it; a superuser's is recorded for
-- snowid_registry_dropped_at(), so that a registry created again waits for
-- its old holders (snowid_registry_recovering).
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

-- The registry (issue 12): a database with snowid installed that members
-- name in snowid.registry.  Their background workers claim node IDs here
-- for a lease, through snowid_registry_claim and snowid_registry_release;
-- nothing here needs snowid preloaded.  Both tables are dumped by pg_dump
-- with their rows, so a restored registry keeps its leases.

CREATE TABLE snowid_registry_settings (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	layout text,		-- the layout every member must use; set by the first claim
	max_lease interval NOT NULL DEFAULT '7 days'
		CHECK (max_lease OPERATOR(pg_catalog.>=) '1 second'::pg_catalog.interval),
	takeover_delay interval NOT NULL DEFAULT '5 seconds'
		CHECK (takeover_delay OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval),
	max_nodes_per_role integer NOT NULL DEFAULT 64
		CHECK (max_nodes_per_role OPERATOR(pg_catalog.>=) 1),
	max_grant_share double precision NOT NULL DEFAULT 0.01
		CHECK (max_grant_share OPERATOR(pg_catalog.>) 0 AND
			   max_grant_share OPERATOR(pg_catalog.<=) 0.25),
	lead_margin interval NOT NULL DEFAULT '1 second'
		CHECK (lead_margin OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval),
	max_grants_per_hour integer NOT NULL DEFAULT 60
		CHECK (max_grants_per_hour OPERATOR(pg_catalog.>=) 1),
	reassert_grace interval NOT NULL DEFAULT '20 seconds'
		CHECK (reassert_grace OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval)
);

COMMENT ON TABLE snowid_registry_settings IS
'registry: the one layout every member must use (set by the first claim; a member with another layout is refused) and the limits the registry sets on every member: longest lease, shortest takeover delay, nodes per login role, largest share of a pool one grant takes, margin of a lease over a member''s max_lead, grants of a pool to one role in an hour, and how long after it may have forgotten its leases (a start, a promotion, a restore, the extension created again) it grants nothing new while their holders re-assert them';

SELECT pg_catalog.pg_extension_config_dump('snowid_registry_settings', '');

-- When this copy of the extension was created (or updated to 1.8): a
-- registry whose snowid was dropped and created again, or restored from a
-- dump (which creates it anew), has forgotten the leases of its members.
-- Not dumped with its row: a restore writes its own time.
CREATE TABLE snowid_registry_installed (
	installed_at timestamptz NOT NULL
);

INSERT INTO snowid_registry_installed VALUES (pg_catalog.now());

COMMENT ON TABLE snowid_registry_installed IS
'registry: when this copy of the extension was created (by CREATE EXTENSION, a restore, or the update to 1.8); until reassert_grace after it, the registry grants nothing new';

REVOKE ALL ON snowid_registry_installed FROM PUBLIC;

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
	last_id bigint,						-- every ID issued on the node is below
										-- it (reported); NULL if none reported
	holder_role name,					-- the login role that holds it (NULL:
										-- a lease of 1.4 not renewed since)
	secret_hash text,					-- SHA-256 (hex) of the holder start's secret
	max_lead_ms bigint,					-- the holder's snowid.max_lead
	floor_until timestamptz,			-- every ID of earlier holders lies
										-- below this time (their lease end
										-- plus their max_lead)
	registry_host boolean NOT NULL DEFAULT false	-- held by the registry's
										-- own server, which issues IDs under
										-- it: no role, no secret, no member
										-- can act on it
);

COMMENT ON TABLE snowid_registry_node IS
'registry: one row per node ID ever claimed: its holder, the lease and the last ID reported (written by snowid_registry_claim and snowid_registry_release); a row with registry_host is the node the registry''s own server issues IDs under, kept from members for max_lease after it last did';

SELECT pg_catalog.pg_extension_config_dump('snowid_registry_node', '');

-- Only pg_catalog's operators and functions: the view is bound when it is
-- created (by CREATE EXTENSION or an update), whatever lies on the
-- search_path then.  The holders' hosts and ports show to pg_monitor.
CREATE VIEW snowid_registry_nodes AS
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

REVOKE ALL ON snowid_registry_nodes FROM PUBLIC;
GRANT SELECT ON snowid_registry_nodes TO pg_monitor;
-- pg_dump of a database with snowid copies the rows of both tables: its
-- owner may read them, as it may read snowid_ticket.
GRANT SELECT ON snowid_registry_node, snowid_registry_settings TO pg_database_owner;
GRANT SELECT ON snowid_registry_nodes TO pg_database_owner;

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

-- Reports are bounded by what is possible (1.8): an ID a member reports
-- (the bound of the IDs it issued, at a claim, a renewal or a release)
-- lies between 0 and the first ID of the tick after the registry's clock
-- plus the holder's max_lead and the registry's lead_margin (which absorbs
-- the difference between the member's clock and the registry's), in the
-- registry's layout.  Anything else is refused and recorded nowhere: a
-- floor of 2^62 reported for a node would stop its next holder for good.
-- The layout is the text members send (snowid_layout_text() in lease.c);
-- NULL where it is not one (the made-up layouts of the regression tests):
-- no member could then be granted a node.  Numeric arithmetic, capped at
-- the layout's end and bigint's: nothing overflows.
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

-- Raises invalid_parameter_value for an ID a member reports (p_what: what
-- it is) outside 0 .. snowid_registry_id_bound(layout, now + max_lead +
-- margin).  NULL reports nothing and passes.
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

-- Who holds a node, as told to the caller of a claim or a pool grant:
-- other members' cluster name, host, port, system identifier and lease
-- times show only to superusers and members of pg_monitor (and to the
-- holder's own login role); to any other caller the holder is "another
-- server" (or "the registry's own server"), and identified is false.
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

-- One row per login role that has claimed a node: a new holder's claim
-- locks its role's row without waiting while it counts the role's nodes
-- and writes its own, so that concurrent claims of one role cannot pass
-- max_nodes_per_role.  The lock lasts the claim's transaction: a member
-- that keeps it open stops only its own role's new claims.
CREATE TABLE snowid_registry_role (
	role name PRIMARY KEY
);

COMMENT ON TABLE snowid_registry_role IS
'registry, internal: one row per login role that claimed a node, locked by its claims of new nodes so that they count its nodes one at a time (max_nodes_per_role)';

-- When snowid was last dropped in this database by a superuser (NULL:
-- never), from a file of the server's (snowid_drop_guard writes it).
CREATE FUNCTION snowid_registry_dropped_at()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowid_registry_dropped_at'
LANGUAGE C VOLATILE;

REVOKE ALL ON FUNCTION snowid_registry_dropped_at() FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_dropped_at() IS
'registry, internal: when a superuser last dropped snowid (or its schema) in this database, NULL if never';

-- A registry may have forgotten leases it granted when its server started
-- (a restart, a crash, a restore from a file copy) or was promoted (an
-- asynchronous standby lacks the last grants), and when its snowid was
-- created again (dropped before, or restored from a dump with leases).
-- For reassert_grace after the latest of these it grants no node and no
-- range to a new holder: every live holder renews within it (members
-- renew every second, retry at least every 4 s, and a connection attempt
-- gives up after 10 s) and, re-asserting its lease, gets it back first.
-- Unconditional after a start or a promotion (the leases granted after a
-- restored backup, or lost with an asynchronous standby, leave no trace),
-- except in a registry whose snowid was created after its server started
-- and never dropped; after snowid's creation, when it was dropped before
-- or its rows were restored (node rows, or pool rows: a dump taken before
-- any member claimed; or kept by the update to 1.8).  PL/pgSQL: the pool
-- table comes later in the install script.  A holder
-- re-asserting within it gets its node with a floor of now
-- (snowid_registry_claim).  While that lasts, since when (reports may move
-- a pool as far as the grants forgotten since then could have reached:
-- snowid_pool_lost_bound) and the detail of the refusal; no row after.
-- Cheap: a few reads of small tables and one stat() of the current
-- timeline's history file.
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

-- The detail of snowid_registry_recovery(), NULL after the grace.
CREATE FUNCTION snowid_registry_recovering()
RETURNS text
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT r.detail FROM @extschema@.snowid_registry_recovery() r
$$;

REVOKE ALL ON FUNCTION snowid_registry_recovering() FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_recovering() IS
'registry, internal: while the registry may have forgotten leases (its server started or was promoted, or snowid was created, less than reassert_grace ago), why it grants nothing new yet; NULL after';

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
--
-- snowid_registry_claim is the loop over the steps below, each an internal
-- function (run as the claim's definer, which alone may call them).

-- Is p_layout a layout snowid could issue IDs under, written as members
-- write it (snowid_layout_text() in lease.c)?  Raises invalid_parameter_value
-- otherwise, before anything is read or kept: the first claim on a new
-- registry sets its layout, and a text no member could send (1.10 kept
-- 'x') would answer every honest member after it with a conflict.  The
-- checks are those of the layout settings (guc.c): node_bits and
-- sequence_bits 0 to 31, id_bits 32 to 63 with at least one bit left for
-- the timestamp, a tick of whole milliseconds from 1 ms to one day, and an
-- epoch that is a valid time, not after the registry's clock (an hour's
-- slack for the members' clocks), spelled exactly as members spell it.
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
	-- The registry's own layout passed this check when the first claim set
	-- it: a claim sending the same text (every renewal) skips the pattern,
	-- which was a third of a renewal's time in the server processes.
	IF EXISTS (SELECT FROM @extschema@.snowid_registry_settings s
				WHERE s.layout OPERATOR(pg_catalog.=) p_layout) THEN
		RETURN;
	END IF;
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

-- Step 0: the arguments of a claim, checked before anything is read.
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

REVOKE ALL ON FUNCTION snowid_registry_claim_check(integer, text, text, text, bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_check(integer, text, text, text, bigint, bigint, bigint) IS
'registry, internal: raises an error for arguments of snowid_registry_claim that no member sends (a layout or start missing, a layout snowid could not have, a short secret, a lease, takeover time or max_lead out of range (max_lead at most an hour, as snowid.max_lead), a highest node ID that is not the layout''s)';

-- Step 1: the settings; the layout: the first claim sets it, every other
-- must match.  Only the registry's own server processes write the row (a
-- first claim on each of two at once: the second waits for the first's
-- insert at most lock_timeout, 100 ms); one still held after that (a
-- superuser's transaction left open) is not waited for longer: an error,
-- and the member claims again.
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

-- The registry's own server, where it issues IDs under the registry's
-- layout: the node it issues under is granted to no member, and its row
-- keeps that node from them for max_lease after it last issued under it,
-- so that a restart of that server under another snowid.node_id does not
-- free the old node at once.  The row is written only when missing, taken
-- from a holder gone, or past half its lease, and never waited for
-- (another claim writes it then).  Returns the node and a bound above
-- every ID that server has issued (NULL, NULL where it issues none under
-- the registry's layout).
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

-- Step 4: no node named (or the named one is taken and was assigned
-- automatically): the node this start already holds (its reply was lost),
-- else the lowest free one, none of p_exclude; NULL if none is free.
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

-- Step 5: the decision on the row of the target node, as it stands (not
-- locked: a conflict holds nothing): ok or conflict, with the floor for a
-- new holder (floor_id, floor_until), the floor the row keeps
-- (row_floor), and whether the caller is the holder (own) or its
-- successor.  A node never claimed (no row) is granted in the branch
-- marked "never claimed".
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

-- Step 6: how many other nodes the login role holds under a live lease,
-- counted under the lock of the role's row in snowid_registry_role, taken
-- without waiting (another claim of the role in a transaction still open:
-- lock_not_available, the member claims again) and kept until the claim's
-- transaction ends, so that no two claims of one role count at once.
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

-- Step 7: write the row of a node granted: locked without waiting, and
-- only as it was read (p_xmin; a row changed meanwhile, or held by a
-- transaction still open, raises lock_not_available; one inserted
-- meanwhile, unique_violation).
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

REVOKE ALL ON FUNCTION snowid_registry_claim_write(snowid_registry_node, text, integer, text, text, integer, numeric, text, text, timestamptz, timestamptz, bigint, name, text, bigint, boolean, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_write(snowid_registry_node, text, integer, text, text, integer, numeric, text, text, timestamptz, timestamptz, bigint, name, text, bigint, boolean, timestamptz) IS
'registry, internal: writes the row of a node granted by a claim, without waiting and only as the claim read it, once the identity the member sent is one a server could have';

CREATE FUNCTION snowid_registry_claim_serve(p_node_id integer,
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
	v_new boolean;
	v_held integer;
	v_busy integer := 0;
	v_waited boolean := false;
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

		-- (in a registry that may have forgotten, a successor passes as
		-- the holder only while the row says its predecessor holds a live
		-- lease: a start of the same server taking its lease over, such
		-- as a restart in place; one taking a node released or run out is
		-- a new holder, since a restored row may name a start that gave
		-- the node up before another server got it, a grant the registry
		-- forgot.  2.0 let such a successor through the grace: found by
		-- the registry fuzzer, seed 81234)
		v_new := v_dec.result = 'ok' AND NOT v_dec.own AND
			NOT (v_dec.successor AND v_row.released_at IS NULL AND
				 v_row.lease_until >= v_now);
		IF v_new AND
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
		ELSIF v_new AND
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
				-- ones.  That transaction is another server process's
				-- (an assigned node is claimed by the first process, the
				-- node's own renewal or release by the node's: 2.0), or a
				-- superuser's: the claim waits for the row at most
				-- lock_timeout (100 ms) and reads it again, once; still
				-- held, an error (the member keeps its lease and asks
				-- again).  No session is ended (2.1).
				v_busy := v_busy + 1;
				IF v_dec.own OR v_dec.successor OR p_auto IS NOT TRUE OR v_busy > 3 THEN
					IF NOT v_waited THEN
						v_waited := true;
						BEGIN
							PERFORM FROM @extschema@.snowid_registry_node n
							  WHERE n.node_id = v_target FOR UPDATE;
							v_busy := v_busy - 1;
							result := NULL;
						EXCEPTION WHEN lock_not_available THEN
							NULL;
						END;
						IF result IS NULL THEN
							CONTINUE;
						END IF;
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

REVOKE ALL ON FUNCTION snowid_registry_claim_serve(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim_serve(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) IS
'registry, internal: what snowid_registry_claim does, applied by the registry''s server process in a transaction of its own, session_user being the member''s role; no member may call it';

-- What a member calls: the call goes to the registry's server process
-- (registry_server.c), which applies snowid_registry_claim_serve.
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
LANGUAGE C
VOLATILE
ROWS 1
AS 'MODULE_PATHNAME', 'snowid_registry_forward';

REVOKE ALL ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) IS
'registry, internal: claims or renews a node ID lease for a member''s login role and start (called by its background worker); ok with the node, the lease the registry grants and the floor to stay above, or conflict naming the holder';

-- A member's renewal of a lease it holds, saying so: its node, its start
-- and the end of the lease it believes it holds.  A registry that may
-- have forgotten the lease (snowid_registry_recovering) grants it back to
-- its holder at once, where it refuses new holders until every live one
-- has had that time.  The claim itself is snowid_registry_claim's, whose
-- signature members of 1.7 call (an added parameter would break them): it
-- is told through a setting of this transaction, read only for this node
-- and start.  A lease end in the past or beyond the longest lease the
-- registry grants is no lease held: that claim is an ordinary one.  Who
-- may call snowid_registry_claim may call this one (it asks, for the login
-- role), so that a registry updated to 1.8 needs no new grant.
CREATE FUNCTION snowid_registry_reassert_serve(p_node_id integer,
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

REVOKE ALL ON FUNCTION snowid_registry_reassert_serve(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_reassert_serve(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint, timestamptz) IS
'registry, internal: what snowid_registry_reassert does, applied by the registry''s server process in a transaction of its own, session_user being the member''s role; no member may call it';

-- What a member calls: the call goes to the registry's server process
-- (registry_server.c), which applies snowid_registry_reassert_serve.
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
LANGUAGE C
VOLATILE
ROWS 1
AS 'MODULE_PATHNAME', 'snowid_registry_forward';

COMMENT ON FUNCTION snowid_registry_reassert(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint, timestamptz) IS
'registry, internal: snowid_registry_claim for a member that holds the lease until p_held_until (its renewal): a registry that may have forgotten the lease grants it back to its holder before any new one';

-- A clean shutdown of the holder ends its lease at once.  The row is
-- written only once no other transaction holds it, waited for at most
-- lock_timeout (100 ms: another server process's claim of the node, or a
-- superuser's transaction; still held, lock_not_available and the member
-- releases again or lets the lease run out); what the next holder must
-- stay above is kept: the latest time any holder could have issued an ID
-- at.
CREATE FUNCTION snowid_registry_release_serve(p_node_id integer, p_start_id text,
										p_secret text, p_last_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
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
	  FOR UPDATE;
	IF v_row.node_id IS NULL THEN
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

REVOKE ALL ON FUNCTION snowid_registry_release_serve(integer, text, text, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_release_serve(integer, text, text, bigint) IS
'registry, internal: what snowid_registry_release does, applied by the registry''s server process in a transaction of its own, session_user being the member''s role; no member may call it';

-- What a member calls: the call goes to the registry's server process
-- (registry_server.c), which applies snowid_registry_release_serve.
CREATE FUNCTION snowid_registry_release(p_node_id integer, p_start_id text,
										p_secret text, p_last_id bigint)
RETURNS boolean
LANGUAGE C
VOLATILE
AS 'MODULE_PATHNAME', 'snowid_registry_forward';

REVOKE ALL ON FUNCTION snowid_registry_release(integer, text, text, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_release(integer, text, text, bigint) IS
'registry, internal: ends the lease of a node ID held by the given start, login role and secret at once (called by a member''s background worker at a clean shutdown); false if they do not hold it';

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

