--
-- The registry side: snowid_registry_claim and snowid_registry_release
-- called directly, as members' background workers call them, with made-up
-- servers: system identifiers 111, 222, ..., start identities s1, s2, ...
-- The layout has node IDs 0 to 3.  No timestamp is printed: times show as
-- comparisons with now().
--

-- No grace here: the registry grants at once after its server's start or
-- snowid's creation (TAP 059 tests the grace).
ALTER TABLE snowid_registry_settings ALTER COLUMN reassert_grace SET DEFAULT '0';

-- A claim as a member makes it; the detail without its times.
CREATE FUNCTION pg_temp.claim(p_node integer, p_sysid numeric, p_start text,
							  p_auto boolean DEFAULT false,
							  p_pred text DEFAULT NULL,
							  p_promoted boolean DEFAULT false,
							  p_last bigint DEFAULT NULL,
							  p_layout text DEFAULT 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63',
							  p_lease bigint DEFAULT 600000)
RETURNS TABLE (result text, node integer, lease_ms bigint, holder text,
			   detail text, floor_id bigint, floor_until text)
LANGUAGE sql AS $$
SELECT c.result, c.node_id, c.lease_ms, c.holder,
	   regexp_replace(c.detail, 'last seen [0-9.]+ s ago, lease until [^;]*',
					  'last seen (...) s ago, lease until (...)'),
	   c.floor_id,
	   CASE WHEN c.floor_until IS NULL THEN NULL
			WHEN c.floor_until <= now() THEN 'past' ELSE 'future' END
  FROM snowid_registry_claim(p_node, p_auto, 3, p_layout, 'c' || p_sysid,
							 'host' || p_sysid, 5432, p_sysid, p_start,
							 rpad(p_start, 32, '#'), p_pred, p_promoted, p_lease,
							 5000, 1000, p_last) c
$$;
CREATE FUNCTION pg_temp.nodes()
RETURNS TABLE (node_id integer, state text, start_id text, last_id bigint,
			   live boolean)
LANGUAGE sql AS $$
SELECT node_id, state, start_id, last_id, lease_until > now()
  FROM snowid_registry_nodes ORDER BY node_id
$$;
\pset null '(null)'

-- A fresh claim of node 1: granted, no floor; the first claim sets the
-- registry's layout.
SELECT * FROM pg_temp.claim(1, 111, 's1');
SELECT * FROM snowid_registry_settings;
-- The same start renews, reporting its last ID.
SELECT * FROM pg_temp.claim(1, 111, 's1', p_last => 100);
SELECT node_id, holder, layout, lease_until > now() AS live,
	   last_seen >= claimed_at AS seen_since_claim, state, cluster_name, host,
	   port, system_identifier, start_id, last_id
  FROM snowid_registry_nodes;

-- Another server (another system identifier) asking for node 1: a conflict
-- naming the holder.
SELECT * FROM pg_temp.claim(1, 222, 's2');
-- Another layout: refused whatever the node.
SELECT * FROM pg_temp.claim(2, 222, 's2', p_layout => 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 11, id_bits 63');
SELECT * FROM pg_temp.claim(NULL, 222, 's2', p_layout => 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 11, id_bits 63');

-- No node named: the lowest free one, 0.  The same start asking again (its
-- reply was lost) gets the same node back, renewed, with the floor the
-- row keeps (here its own report, 200: from 1.11 a claim of the holder's
-- start that does not re-assert the lease carries the row's floor); the
-- next server gets 2.
SELECT * FROM pg_temp.claim(NULL, 222, 's2', p_last => 200);
SELECT * FROM pg_temp.claim(NULL, 222, 's2');
SELECT * FROM pg_temp.claim(NULL, 333, 's3');
SELECT * FROM pg_temp.nodes();

-- A clean release ends the lease at once; only the holding start can
-- release, and only once.
SELECT snowid_registry_release(1, 's2', rpad('s2', 32, '#'), 999) AS released_by_another;
SELECT snowid_registry_release(1, 's1', rpad('s1', 32, '#'), 150) AS released;
SELECT snowid_registry_release(1, 's1', rpad('s1', 32, '#'), 160) AS released_again;
SELECT state, lease_until = last_seen AS lease_ended, last_id
  FROM snowid_registry_nodes WHERE node_id = 1;
SELECT released_at AS released_1 FROM snowid_registry_node WHERE node_id = 1 \gset
-- Another server takes the released node: it stays above the last ID and
-- the release time of the previous holder plus its max_lead (1 s): IDs it
-- issued may lie that far ahead of its clock.
SELECT c.result, c.node_id, c.detail, c.floor_id,
	   c.floor_until - :'released_1' AS floor_until_after_release
  FROM snowid_registry_claim(1, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c444', 'host444', 5432,
							 444, 's4', rpad('s4', 32, '#'), NULL, false, 600000,
							 5000, 1000, NULL) c;

-- A lease that ran out: the holder of node 2 reports ID 300, then its
-- lease is moved into the past.
SELECT * FROM pg_temp.claim(2, 333, 's3', p_last => 300);
UPDATE snowid_registry_node
   SET lease_until = now() - interval '1 min', last_seen = now() - interval '2 min'
 WHERE node_id = 2;
SELECT * FROM pg_temp.nodes();
SELECT lease_until AS expired_2 FROM snowid_registry_node WHERE node_id = 2 \gset
SELECT c.result, c.node_id, c.detail, c.floor_id,
	   c.floor_until - :'expired_2' AS floor_until_after_lease_end
  FROM snowid_registry_claim(2, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c555', 'host555', 5432,
							 555, 's5', rpad('s5', 32, '#'), NULL, false, 600000,
							 5000, 1000, 250) c;
-- The new holder's row: its own start, the old holder's bound kept.
SELECT * FROM pg_temp.nodes();
-- A lease that ran out but was not taken is renewed by its own start,
-- with the floor of the grant that made it the holder (the old holder's
-- ID 300 and its lease's end): a member whose answer to that grant was
-- lost, or that refused it, applies it now (1.11; before, this answer had
-- no floor and the member issued without ever applying one).
UPDATE snowid_registry_node SET lease_until = now() - interval '1 min'
 WHERE node_id = 2;
SELECT * FROM pg_temp.claim(2, 555, 's5');

-- The same server after a crash (its earlier start as predecessor): while
-- the old start has been seen within the takeover time, a conflict; once
-- it has been silent longer, taken over, with the old start's last ID.
SELECT * FROM pg_temp.claim(0, 222, 's2b', p_pred => 's2');
UPDATE snowid_registry_node SET last_seen = now() - interval '10 s'
 WHERE node_id = 0;
SELECT * FROM pg_temp.claim(0, 222, 's2b', p_pred => 's2', p_last => 210);
SELECT * FROM pg_temp.nodes() WHERE node_id = 0;
-- A copy of it (the same system identifier, no predecessor, not promoted)
-- never takes it over, however long the holder has been silent.
UPDATE snowid_registry_node SET last_seen = now() - interval '1 min'
 WHERE node_id = 0;
SELECT * FROM pg_temp.claim(0, 222, 's2c');
-- A predecessor that is not the holder does not count either.
SELECT * FROM pg_temp.claim(0, 222, 's2c', p_pred => 's2');

-- A promoted streaming standby of the holder of node 1: the same rule.
SELECT * FROM pg_temp.claim(1, 444, 's4p', p_promoted => true);
UPDATE snowid_registry_node SET last_seen = now() - interval '10 s'
 WHERE node_id = 1;
SELECT * FROM pg_temp.claim(1, 444, 's4p', p_promoted => true);
-- The same system identifier through promotion, but the holder is
-- another server: no takeover.
SELECT * FROM pg_temp.claim(1, 555, 's5p', p_promoted => true);

-- An automatically assigned node held by another server: another free node
-- is granted.  With none free, the conflict over the node asked for.
SELECT * FROM pg_temp.claim(1, 666, 's6', p_auto => true);
SELECT * FROM pg_temp.claim(1, 777, 's7', p_auto => true);
SELECT * FROM pg_temp.claim(NULL, 777, 's7');
SELECT * FROM pg_temp.nodes();

-- Node IDs outside the layout and nonsense arguments are errors.
DO $$
DECLARE
	args text;
BEGIN
	FOREACH args IN ARRAY ARRAY[
		'4, false, 3, ''epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'', NULL, NULL, NULL, 1, ''s'', repeat(''k'', 32), NULL, false, 1000, 5000, 0, NULL',
		'-1, true, 3, ''epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'', NULL, NULL, NULL, 1, ''s'', repeat(''k'', 32), NULL, false, 1000, 5000, 0, NULL',
		'0, false, -1, ''epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'', NULL, NULL, NULL, 1, ''s'', repeat(''k'', 32), NULL, false, 1000, 5000, 0, NULL',
		'0, false, 3, ''epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'', NULL, NULL, NULL, 1, NULL, repeat(''k'', 32), NULL, false, 1000, 5000, 0, NULL',
		'0, false, 3, ''epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'', NULL, NULL, NULL, 1, ''s'', repeat(''k'', 32), NULL, false, 0, 5000, 0, NULL']
	LOOP
		BEGIN
			EXECUTE 'SELECT snowid_registry_claim(' || args || ')';
			RAISE NOTICE 'no error';
		EXCEPTION WHEN OTHERS THEN
			RAISE NOTICE '%: %', SQLSTATE, SQLERRM;
		END;
	END LOOP;
END
$$;

-- Members call these functions as a role granted EXECUTE on them; nobody
-- else can, nor write the tables.  The view shows to pg_monitor.
CREATE ROLE regress_registry_member;
CREATE ROLE regress_registry_other;
CREATE ROLE regress_registry_monitor IN ROLE pg_monitor;
GRANT EXECUTE ON FUNCTION
	snowid_registry_claim(integer, boolean, integer, text, text, text, integer,
						  numeric, text, text, text, boolean, bigint, bigint,
						  bigint, bigint),
	snowid_registry_release(integer, text, text, bigint)
	TO regress_registry_member;
SET ROLE regress_registry_other;
SELECT * FROM snowid_registry_claim(NULL, true, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', NULL, NULL,
									NULL, 888, 's8', rpad('s8', 32, '#'), NULL, false,
									10000, 5000, 1000, NULL);
SELECT snowid_registry_release(3, 's6', rpad('s6', 32, '#'), NULL);
SELECT count(*) FROM snowid_registry_nodes;
UPDATE snowid_registry_node SET lease_until = now();
RESET ROLE;
SET ROLE regress_registry_member;
SELECT snowid_registry_release(3, 's6', rpad('s6', 32, '#'), NULL) AS released;
SELECT result, node_id, floor_id
  FROM snowid_registry_claim(NULL, true, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', NULL, 'host888', 5432,
							 888, 's8', rpad('s8', 32, '#'), NULL, false, 10000,
							 5000, 1000, NULL);
SELECT count(*) FROM snowid_registry_node;
RESET ROLE;
SET ROLE regress_registry_monitor;
SELECT node_id, state FROM snowid_registry_nodes ORDER BY node_id;
-- Without a cluster name (s8 gave none), the holder is host, port and
-- system identifier.
SELECT holder FROM snowid_registry_nodes WHERE node_id = 3;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION
	snowid_registry_claim(integer, boolean, integer, text, text, text, integer,
						  numeric, text, text, text, boolean, bigint, bigint,
						  bigint, bigint),
	snowid_registry_release(integer, text, text, bigint)
	FROM regress_registry_member;
DROP ROLE regress_registry_member, regress_registry_other, regress_registry_monitor;

TRUNCATE snowid_registry_node, snowid_registry_settings;

-- The server this registry lives on issues IDs itself (snowid preloaded,
-- snowid.node_id set), as a Citus coordinator hosting the registry does:
-- the node it issues under, in the registry's layout, is never granted to
-- another server.  A registry with this server's layout; its node shows
-- as N.
SELECT snowid_next() > 0 AS issued;
SELECT h.layout IS NOT NULL AS preloaded, h.node_id IS NOT NULL AS issues,
	   h.issued_below > 0 AS has_bound, h.start_id IS NOT NULL AS has_start,
	   h.port = current_setting('port')::integer AS port
  FROM snowid_registry_host() h;
INSERT INTO snowid_registry_settings (only_row, layout, max_nodes_per_role)
SELECT true, h.layout, 1 FROM snowid_registry_host() h;
-- A claim in the host's layout; p_forge: with the start and system
-- identifier of the host, as its promoted successor.
CREATE FUNCTION pg_temp.hclaim(p_node integer, p_sysid numeric, p_start text,
							   p_auto boolean DEFAULT false,
							   p_forge boolean DEFAULT false)
RETURNS TABLE (result text, node text, lease_ms bigint, holder text,
			   detail text, floor_id text, floor_until text)
LANGUAGE sql AS $$
SELECT c.result,
	   CASE WHEN c.node_id = h.node_id THEN 'N' ELSE c.node_id::text END,
	   c.lease_ms,
	   regexp_replace(c.holder, ':.*', ': (...)'),
	   replace(regexp_replace(c.detail, 'held by .*, last seen [0-9.]+ s ago, lease until [^;]*',
							  'held by (...), last seen (...) s ago, lease until (...)'),
			   'node ' || h.node_id || ' ', 'node N '),
	   CASE WHEN c.floor_id IS NULL THEN NULL
			WHEN c.floor_id >= h.issued_below THEN 'above the host''s IDs'
			ELSE 'below the host''s IDs' END,
	   CASE WHEN c.floor_until IS NULL THEN NULL
			WHEN c.floor_until <= now() THEN 'past' ELSE 'future' END
  FROM snowid_registry_host() h,
	   snowid_registry_claim(coalesce(p_node, CASE WHEN NOT p_auto THEN h.node_id END),
							 p_auto,
							 (1 << substring(h.layout FROM 'node_bits ([0-9]+)')::integer) - 1,
							 h.layout, 'c' || p_sysid, 'host' || p_sysid, 5432,
							 CASE WHEN p_forge THEN h.system_identifier ELSE p_sysid END,
							 CASE WHEN p_forge THEN h.start_id ELSE p_start END,
							 rpad(p_start, 32, '#'),
							 CASE WHEN p_forge THEN h.start_id END, p_forge,
							 600000, 5000, 1000, NULL) c
$$;
-- A server naming the host's node: a conflict, naming the registry's own
-- server; the host's row is written, held by no role.
SELECT * FROM pg_temp.hclaim(NULL, 111, 'h1');
SELECT n.node_id = h.node_id AS hosts_node, n.state, n.registry_host,
	   n.holder LIKE 'the registry''s own server: %' AS holder,
	   n.holder_role, n.start_id = h.start_id AS start,
	   n.system_identifier = h.system_identifier AS sysid,
	   n.last_id > 0 AS last_id,
	   n.lease_until > now() + interval '6 days' AS lease
  FROM snowid_registry_nodes n, snowid_registry_host() h;
-- Automatic: another node, above every ID the host has issued; the host's
-- row counts toward no role's nodes (max_nodes_per_role is 1).
SELECT * FROM pg_temp.hclaim(NULL, 222, 'h2', p_auto => true);
UPDATE snowid_registry_settings SET max_nodes_per_role = 64;
-- Nobody renews or releases the host's row, whatever it names.
SELECT snowid_registry_holds(h.node_id, h.system_identifier, h.start_id, '')
	   AS holds
  FROM snowid_registry_host() h;
SELECT snowid_registry_release(h.node_id, h.start_id, '', NULL) AS released
  FROM snowid_registry_host() h;
SELECT result, node FROM pg_temp.hclaim(NULL, 111, 'h1', p_forge => true);
-- Its lease ended by hand while the host still issues under it: still
-- refused, and the row is the host's again.
UPDATE snowid_registry_node SET released_at = now(), lease_until = now()
 WHERE registry_host;
SELECT result, node, detail FROM pg_temp.hclaim(NULL, 333, 'h3');
SELECT state, registry_host FROM snowid_registry_nodes WHERE registry_host;
-- A node the host issued under before (a row of the host's, not its node
-- now): kept while its lease lasts, even from a claim with the host's
-- start and system identifier, then granted above its lease end plus the
-- host's max_lead.
UPDATE snowid_registry_node SET node_id = 7 WHERE registry_host;
SELECT * FROM pg_temp.hclaim(7, 333, 'h3');
SELECT result, node FROM pg_temp.hclaim(7, 111, 'h1', p_forge => true);
UPDATE snowid_registry_node SET lease_until = now() - interval '1 ms'
 WHERE node_id = 7;
SELECT * FROM pg_temp.hclaim(7, 333, 'h3');
SELECT n.node_id = h.node_id AS hosts_node, n.state, n.registry_host,
	   n.holder_role IS NOT NULL AS role
  FROM snowid_registry_nodes n, snowid_registry_host() h
 ORDER BY n.registry_host, n.node_id;

-- Retiring a node whose holder is gone (snowid_registry_retire): an
-- expired lease is released as of its end, with the floor of a release;
-- a held node, the host's, one never claimed: refused, nothing changed.
INSERT INTO snowid_registry_node
	(node_id, host, port, system_identifier, start_id, layout, claimed_at,
	 last_seen, lease_until, last_id, holder_role, max_lead_ms)
VALUES (40, 'gone.example', 5432, 1, 's40', 'L', now() - interval '2 days',
		now() - interval '1 day', now() - interval '1 day', 1000, 'r40', 2000),
	   (41, 'alive.example', 5432, 2, 's41', 'L', now(), now(),
		now() + interval '1 hour', 2000, 'r41', 2000);
SELECT node_id, state FROM snowid_registry_nodes WHERE node_id IN (40, 41) ORDER BY 1;
SELECT snowid_registry_retire(40) = lease_until AS at_lease_end
  FROM snowid_registry_node WHERE node_id = 40;
SELECT v.state, n.released_at = n.lease_until AS released_at_end,
	   n.floor_until = n.lease_until + interval '2 s' AS floor, n.last_id
  FROM snowid_registry_nodes v JOIN snowid_registry_node n USING (node_id)
 WHERE node_id = 40;
SELECT snowid_registry_retire(40) = lease_until AS again_the_same
  FROM snowid_registry_node WHERE node_id = 40;
CREATE FUNCTION pg_temp.retire(p_node integer) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_detail text; v_hint text;
BEGIN
	PERFORM snowid_registry_retire(p_node);
	RETURN 'retired';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL, v_hint = PG_EXCEPTION_HINT;
	RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'until .*', 'until <time>') ||
		   coalesce(' / ' || regexp_replace(nullif(v_detail, ''), 'last seen [^)]*', 'last seen <time>'), '') ||
		   coalesce(' / ' || nullif(v_hint, ''), '');
END
$$;
SELECT pg_temp.retire(41) AS held;
SELECT pg_temp.retire(42) AS never_claimed;
SELECT pg_temp.retire(node_id) AS hosts FROM snowid_registry_node WHERE registry_host;
SELECT node_id, state FROM snowid_registry_nodes WHERE node_id IN (40, 41) ORDER BY 1;
SELECT has_function_privilege('public', 'snowid_registry_retire(integer)', 'EXECUTE') AS public_may;

TRUNCATE snowid_registry_node, snowid_registry_settings;
