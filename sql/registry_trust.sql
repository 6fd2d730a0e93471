--
-- The registry trusts no caller (1.5): leases belong to the login role that
-- took them (session_user; SET SESSION AUTHORIZATION stands in for a
-- member's own login here) and to the secret of the start that took them;
-- the registry, not the caller, sets the lease, the takeover delay, the
-- nodes per role and the size of a grant.  Made-up members as in the
-- registry test: system identifiers 111, 222, ..., starts s1, s2, ...,
-- each start's secret its name padded with '#'.  The layout is one whose
-- IDs ran out long ago (26 timestamp bits of 1 ms from 2025), so that the
-- bound of the IDs a member may report is its end, 2^40, whatever the day.
--
\pset null '(null)'
-- No grace here: the registry grants at once after its server's start or
-- snowid's creation (TAP 059 tests the grace).
ALTER TABLE snowid_registry_settings ALTER COLUMN reassert_grace SET DEFAULT '0';
CREATE ROLE regress_trust_members;
CREATE ROLE regress_trust_m1 IN ROLE regress_trust_members;
CREATE ROLE regress_trust_m2 IN ROLE regress_trust_members;
GRANT EXECUTE ON FUNCTION
	snowid_registry_claim(integer, boolean, integer, text, text, text, integer,
						  numeric, text, text, text, boolean, bigint, bigint,
						  bigint, bigint),
	snowid_registry_release(integer, text, text, bigint),
	snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]),
	snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[]),
	snowid_pool_return(text, integer, numeric, text, text, bigint, bigint)
	TO regress_trust_members;

-- A claim as the calling role: the secret is the start's unless given.
CREATE FUNCTION pg_temp.claim(p_node integer, p_sysid numeric, p_start text,
							  p_secret text DEFAULT NULL,
							  p_pred text DEFAULT NULL,
							  p_promoted boolean DEFAULT false,
							  p_lease bigint DEFAULT 600000,
							  p_takeover bigint DEFAULT 5000,
							  p_max_lead bigint DEFAULT 1000,
							  p_auto boolean DEFAULT false)
RETURNS TABLE (result text, node integer, lease_ms bigint, detail text)
LANGUAGE sql AS $$
SELECT c.result, c.node_id, c.lease_ms,
	   regexp_replace(c.detail, 'last seen [0-9.]+ s ago, lease until [^;]*',
					  'last seen (...) s ago, lease until (...)')
  FROM snowid_registry_claim(p_node, p_auto, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c' || p_sysid,
							 'host' || p_sysid, 5432, p_sysid, p_start,
							 coalesce(p_secret, rpad(p_start, 32, '#')), p_pred,
							 p_promoted, p_lease, p_takeover, p_max_lead, NULL) c
$$;
CREATE FUNCTION pg_temp.nodes()
RETURNS TABLE (node_id integer, state text, start_id text, holder_role name,
			   max_lead_ms bigint)
LANGUAGE sql AS $$
SELECT node_id, state, start_id, holder_role, max_lead_ms
  FROM snowid_registry_nodes ORDER BY node_id
$$;
GRANT EXECUTE ON FUNCTION pg_temp.claim(integer, numeric, text, text, text, boolean, bigint, bigint, bigint, boolean)
	TO regress_trust_members;

-- 1.11: the first claim on a new registry sets its layout, but only to
-- one snowid could have, written as members write it; any other text
-- (1.10 kept 'x', and every honest member after it got a conflict), and
-- an identity no server has, is refused (22023) and nothing is kept: the
-- registry has no layout yet and no node, and member 1's claim below is
-- granted.
SET SESSION AUTHORIZATION regress_trust_m1;
DO $$
DECLARE
	a text[];
	v_detail text;
BEGIN
	FOREACH a SLICE 1 IN ARRAY ARRAY[
		['x', 'c', '5432', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 40, sequence_bits 12, id_bits 63', 'c', '5432', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 64', 'c', '5432', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 30, id_bits 32', 'c', '5432', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1500us, node_bits 2, sequence_bits 12, id_bits 63', 'c', '5432', '110', 's0'],
		['epoch 2025-01-01 24:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c', '5432', '110', 's0'],
		['epoch 2999-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c', '5432', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 02, sequence_bits 12, id_bits 63', 'c', '5432', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', repeat('c', 300), '5432', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', '0', '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', '5432', 'NaN', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', '5432', '-1', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', '5432', '110', repeat('s', 65)],
		-- 2.1: no port, no system identifier (found by the registry fuzzer)
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', NULL, '110', 's0'],
		['epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', '5432', NULL, 's0']]
	LOOP
		BEGIN
			PERFORM snowid_registry_claim(0, false, 3, a[1], a[2], 'h', a[3]::integer,
										  a[4]::numeric, a[5], repeat('k', 32), NULL,
										  false, 600000, 5000, 1000, NULL);
			RAISE NOTICE 'no error';
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
			RAISE NOTICE '%: %; %', SQLSTATE, SQLERRM, v_detail;
		END;
	END LOOP;
END
$$;
RESET SESSION AUTHORIZATION;
SELECT (SELECT count(*) FROM snowid_registry_settings WHERE layout IS NOT NULL) AS layouts,
	   (SELECT count(*) FROM snowid_registry_node) AS nodes;

-- Member 1 (role m1) takes node 1; member 2 (role m2) node 2.
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT * FROM pg_temp.claim(1, 111, 's1');
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT * FROM pg_temp.claim(2, 222, 's2');
RESET SESSION AUTHORIZATION;
SELECT * FROM pg_temp.nodes();

-- Role m2, which knows member 1's system identifier and start, cannot take
-- node 1 or act for it: not as its promoted standby asking for no takeover
-- delay, not naming its start (without its secret, or with it: the role is
-- not the holder's), not by releasing it.
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT * FROM pg_temp.claim(1, 111, 's1x', p_pred => 's1', p_promoted => true,
							p_takeover => 0);
SELECT * FROM pg_temp.claim(1, 111, 's1', p_secret => repeat('x', 32));
SELECT * FROM pg_temp.claim(1, 111, 's1');
SELECT snowid_registry_release(1, 's1', rpad('s1', 32, '#'), 99) AS released;
RESET SESSION AUTHORIZATION;
SELECT * FROM pg_temp.nodes();

-- 1.8: the conflicts above name no other member (cluster, host, port,
-- system identifier, lease times): a role in pg_monitor sees them.
CREATE ROLE regress_trust_monitor IN ROLE regress_trust_members, pg_monitor;
SET SESSION AUTHORIZATION regress_trust_monitor;
SELECT * FROM pg_temp.claim(1, 333, 's3');
RESET SESSION AUTHORIZATION;

-- 1.8: an ID a member reports lies between 0 and what its layout can hold
-- by now plus max_lead: the holder's release of node 1 reporting -5 is
-- refused (22023) and records nothing; a max_lead beyond an hour (the
-- largest snowid.max_lead) is refused too.
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT snowid_registry_release(1, 's1', rpad('s1', 32, '#'), -5) AS released;
SELECT result FROM pg_temp.claim(1, 111, 's1', p_max_lead => 3600001);
RESET SESSION AUTHORIZATION;
SELECT * FROM pg_temp.nodes();

-- The bound in a layout as members write it: the first ID of the tick
-- after the time; 0 before the epoch; capped at 2^id_bits and at bigint;
-- NULL for a text that is no layout.
SELECT snowid_registry_id_bound(l, t::timestamptz) AS bound
  FROM (VALUES ('2025-01-01 00:00:00.0015+00', 63),
			   ('2024-12-31 23:59:59+00', 63),
			   ('2300-01-01 00:00:00+00', 63),
			   ('2300-01-01 00:00:00+00', 40)) v(t, bits),
	   LATERAL (SELECT 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 10, sequence_bits 12, id_bits ' || bits AS l) x;
SELECT snowid_registry_id_bound('layout T', now()) AS bound;

-- Its own role, another start of the same server (a restart or a promoted
-- standby): the registry's takeover delay (5 s), not the caller's 0.
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, node FROM pg_temp.claim(1, 111, 's1b', p_pred => 's1', p_takeover => 0);
RESET SESSION AUTHORIZATION;
UPDATE snowid_registry_node SET last_seen = now() - interval '10 s' WHERE node_id = 1;
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, node, detail FROM pg_temp.claim(1, 111, 's1b', p_pred => 's1', p_takeover => 0);
-- the old start, with its secret, no longer renews or releases
SELECT result, node FROM pg_temp.claim(1, 111, 's1');
SELECT snowid_registry_release(1, 's1', rpad('s1', 32, '#'), 99) AS released;
RESET SESSION AUTHORIZATION;

-- A lease of 40 years is granted for the registry's longest, 7 days; a
-- lease shorter than the member's max_lead plus the margin is refused.
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT result, node, lease_ms, lease_ms = 7 * 86400000 AS seven_days
  FROM pg_temp.claim(2, 222, 's2', p_lease => 40 * 365 * 86400000::bigint);
SELECT result, node, lease_ms, detail
  FROM pg_temp.claim(3, 222, 's2c', p_lease => 2000, p_max_lead => 5000);
RESET SESSION AUTHORIZATION;

-- Nodes per role: with a limit of 2, role m2 gets a second node, not a third.
UPDATE snowid_registry_settings SET max_nodes_per_role = 2;
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT result, node FROM pg_temp.claim(NULL, 223, 's2d', p_auto => true);
SELECT result, node, detail FROM pg_temp.claim(NULL, 224, 's2e', p_auto => true);
-- at the limit, a node still leased to its start renews, whether claimed
-- again or re-asserted
SELECT result, node FROM pg_temp.claim(2, 222, 's2');
SELECT c.result, c.node_id
  FROM snowid_registry_reassert(2, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c222', 'host222', 5432, 222, 's2',
								rpad('s2', 32, '#'), NULL, false, 600000, 5000, 1000,
								NULL, now() + interval '1 min') c;
RESET SESSION AUTHORIZATION;
-- 2.1: once the lease of its node 2 has run out, the role claims node 3 in
-- its place; node 2 taken back by its own start would be a third node
-- (2.0 granted it: the limit was applied to new holders only; found by the
-- registry fuzzer, seed 39211), claimed again or re-asserted alike.
UPDATE snowid_registry_node SET lease_until = now() - interval '1 s'
 WHERE node_id = 2;
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT result, node FROM pg_temp.claim(3, 224, 's2e');
SELECT result, node, detail FROM pg_temp.claim(2, 222, 's2');
SELECT c.result, c.node_id, c.detail
  FROM snowid_registry_reassert(2, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c222', 'host222', 5432, 222, 's2',
								rpad('s2', 32, '#'), NULL, false, 600000, 5000, 1000,
								NULL, now() + interval '1 min') c;
RESET SESSION AUTHORIZATION;
SELECT count(*) AS held_by_m2 FROM snowid_registry_nodes
 WHERE holder_role = 'regress_trust_m2' AND state = 'held';
-- node 3 gone (as never claimed), node 2 is taken back
DELETE FROM snowid_registry_node WHERE node_id = 3;
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT result, node FROM pg_temp.claim(2, 222, 's2');
RESET SESSION AUTHORIZATION;
UPDATE snowid_registry_settings SET max_nodes_per_role = 64;

-- max_lead travels with the lease: the next holder of a released node
-- stays above the release time plus the old holder's max_lead.
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT result FROM pg_temp.claim(0, 223, 's2d', p_max_lead => 4000);
SELECT snowid_registry_release(0, 's2d', rpad('s2d', 32, '#'), 500) AS released;
RESET SESSION AUTHORIZATION;
SELECT released_at AS released_0 FROM snowid_registry_node WHERE node_id = 0 \gset
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT c.result, c.node_id, c.floor_id, c.floor_until - :'released_0' AS above_release_by
  FROM snowid_registry_claim(0, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', 'h', 5432, 112, 's1z',
							 rpad('s1z', 32, '#'), NULL, false, 600000, 5000, 1000,
							 NULL) c;
RESET SESSION AUTHORIZATION;
SELECT * FROM pg_temp.nodes();

-- A lease of 1.4 (no role, no secret) is bound to its start's role and
-- secret at the start's first renewal; then no other role renews it.
UPDATE snowid_registry_node SET holder_role = NULL, secret_hash = NULL
 WHERE node_id = 2;
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT result, node FROM pg_temp.claim(2, 222, 's2');
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, node FROM pg_temp.claim(2, 222, 's2');
RESET SESSION AUTHORIZATION;
SELECT node_id, holder_role FROM snowid_registry_node WHERE node_id = 2;

-- Pools: only the holder (role, start, secret) is granted, reports or
-- gives back; a grant takes at most max_grant_share of what is left (1 %,
-- at least 1,024); a report larger than any grant is not recorded.
SELECT snowid_pool_create('trust', 'integer');
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, first_value, last_value, last_value - first_value + 1 AS n
  FROM snowid_pool_grant('trust', 1, 111, 's1b', rpad('s1b', 32, '#'), 'r1',
						 1000000000, '{}', '{}');
SELECT result, detail
  FROM snowid_pool_grant('trust', 2, 222, 's2', rpad('s2', 32, '#'), 'r1', 10,
						 '{}', '{}');
SELECT snowid_pool_report(2, 222, 's2', rpad('s2', 32, '#'), '{trust}',
						  '{30000000}', '{30000999}') AS recorded_for_another;
SELECT snowid_pool_return('trust', 2, 222, 's2', rpad('s2', 32, '#'), 1, 1) AS returned_for_another;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT snowid_pool_report(2, 222, 's2', rpad('s2', 32, '#'), '{trust}',
						  '{100000000}', '{2147483647}') AS recorded_whole_pool;
SELECT snowid_pool_report(2, 222, 's2', rpad('s2', 32, '#'), '{trust}',
						  '{30000000}', '{30000999}') AS recorded_lost_grant;
SELECT snowid_pool_return('trust', 1, 111, 's1b', rpad('s1b', 32, '#'), 1, 1) AS returned_for_another;
RESET SESSION AUTHORIZATION;
SELECT name, next_value, values_left FROM snowid_pools;
SELECT pool, node_id, first_value, last_value, reported FROM snowid_pool_ranges
 ORDER BY first_value;

-- A report that overlaps a range the registry knows, or names more than
-- four ranges of a pool, records nothing beyond the first four that
-- overlap nothing; a range recorded from a report is never given back, so
-- a report and a return cannot move the pool back under another's range.
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT snowid_pool_report(2, 222, 's2', rpad('s2', 32, '#'), '{trust}',
						  '{21474000}', '{21475000}') AS recorded_overlapping;
SELECT snowid_pool_report(2, 222, 's2', rpad('s2', 32, '#'),
						  '{trust,trust,trust,trust,trust}',
						  '{40000000,40001000,40002000,40003000,40004000}',
						  '{40000999,40001999,40002999,40003999,40004999}') AS recorded_of_five;
SELECT snowid_pool_return('trust', 2, 222, 's2', rpad('s2', 32, '#'), 30000000,
						  30000000) AS returned_reported;
RESET SESSION AUTHORIZATION;
SELECT next_value FROM snowid_pools WHERE name = 'trust';
-- A role's grants of a pool are limited per hour (here to 3): no loop of
-- requests drains a pool.
UPDATE snowid_registry_settings SET max_grants_per_hour = 3;
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT g.result, g.detail
  FROM generate_series(2, 4) AS i,
	   LATERAL snowid_pool_grant('trust', 1, 111, 's1b', rpad('s1b', 32, '#'), 'r' || i,
								 10, '{}', '{}') g;
RESET SESSION AUTHORIZATION;
UPDATE snowid_registry_settings SET max_grants_per_hour = 16;
-- A range is given back only by the start it was granted to: a later
-- start of the same server that took the node over keeps it.
UPDATE snowid_registry_node SET last_seen = now() - interval '10 s' WHERE node_id = 1;
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, node FROM pg_temp.claim(1, 111, 's1c', p_pred => 's1b');
SELECT snowid_pool_return('trust', 1, 111, 's1c', rpad('s1c', 32, '#'), 1, 1000) AS returned_by_successor;
RESET SESSION AUTHORIZATION;

-- A lease of 1.4 (no role) is taken over only by its own next start, not
-- by another role calling itself its promoted standby.
UPDATE snowid_registry_node SET holder_role = NULL, secret_hash = NULL,
	   last_seen = now() - interval '10 s'
 WHERE node_id = 2;
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, node FROM pg_temp.claim(2, 222, 's2x', p_promoted => true);
SET SESSION AUTHORIZATION regress_trust_m2;
SELECT result, node FROM pg_temp.claim(2, 222, 's2y', p_pred => 's2');
RESET SESSION AUTHORIZATION;

-- What a holder could issue ahead of its clock is not forgotten by a claim
-- and a release in between: node 0, released with max_lead 4 s above, is
-- taken and released again with max_lead 0; the next holder still stays
-- above the first release plus 4 s.
SELECT floor_until AS floor_0 FROM snowid_registry_node WHERE node_id = 0 \gset
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT snowid_registry_release(0, 's1z', rpad('s1z', 32, '#'), NULL) AS released;
SELECT result FROM pg_temp.claim(0, 113, 's1q', p_max_lead => 0);
SELECT snowid_registry_release(0, 's1q', rpad('s1q', 32, '#'), NULL) AS released;
SELECT c.result, c.floor_until >= :'floor_0' AS above_the_first_floor
  FROM snowid_registry_claim(0, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c', 'h', 5432, 114, 's1r',
							 rpad('s1r', 32, '#'), NULL, false, 600000, 5000, 1000,
							 NULL) c;
RESET SESSION AUTHORIZATION;

-- A call longer than a request slot holds (32 KB) is refused as junk
-- before it reaches the registry's server process (2.0).
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result FROM snowid_registry_claim(1, false, 3, repeat('x', 40000), 'c', 'h', 5432, 111, 's1b',
										 rpad('s1b', 32, '#'), NULL, false, 600000, 5000, 1000, NULL);
RESET SESSION AUTHORIZATION;

-- A claim inside a transaction that is not read committed (1.x refused it:
-- it would decide on leases as an old snapshot saw them) is decided, from
-- 2.0, by the registry's server process in a transaction of its own at
-- read committed, on the leases as they stand: here node 1 is another's.
SET SESSION AUTHORIZATION regress_trust_m1;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT result FROM pg_temp.claim(1, 111, 's1b');
ROLLBACK;
RESET SESSION AUTHORIZATION;

-- 2.1: a registry that may have forgotten grants no new holder in its
-- grace, a successor of the start its row names (same role and system
-- identifier) included: a restored row may name a start that released the
-- node before another server got it, a grant the registry forgot.  2.0
-- granted the successor's claim at once, and its re-assertion with no
-- floor (found by the registry fuzzer, seed 81234); from 2.1 the claim
-- waits for the grace's end and the re-assertion comes with a floor of
-- now.  Here node 3, released by start s1g, in a registry whose snowid
-- looks restored a moment ago.
DELETE FROM snowid_registry_node WHERE node_id = 3;
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, node FROM pg_temp.claim(3, 131, 's1g', p_max_lead => 0);
SELECT snowid_registry_release(3, 's1g', rpad('s1g', 32, '#'), NULL) AS released;
RESET SESSION AUTHORIZATION;
SELECT max(installed_at) AS installed_0 FROM snowid_registry_installed \gset
UPDATE snowid_registry_installed SET installed_at = clock_timestamp();
UPDATE snowid_registry_settings SET reassert_grace = '1 hour';
SET SESSION AUTHORIZATION regress_trust_m1;
SELECT result, node,
	   detail LIKE 'the registry had its snowid created (or restored) % s ago and grants new leases after 3600 s, %' AS in_the_grace
  FROM pg_temp.claim(3, 131, 's1h', p_pred => 's1g', p_max_lead => 0);
SELECT c.result, c.node_id, c.floor_until >= now() AS floor_of_now
  FROM snowid_registry_reassert(3, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 40', 'c131', 'host131', 5432, 131, 's1h',
								rpad('s1h', 32, '#'), 's1g', false, 600000, 5000, 0,
								NULL, now() + interval '1 min') c;
RESET SESSION AUTHORIZATION;
UPDATE snowid_registry_settings SET reassert_grace = '0';
UPDATE snowid_registry_installed SET installed_at = :'installed_0';

REVOKE EXECUTE ON FUNCTION
	snowid_registry_claim(integer, boolean, integer, text, text, text, integer,
						  numeric, text, text, text, boolean, bigint, bigint,
						  bigint, bigint),
	snowid_registry_release(integer, text, text, bigint),
	snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[]),
	snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[]),
	snowid_pool_return(text, integer, numeric, text, text, bigint, bigint)
	FROM regress_trust_members;
DROP FUNCTION pg_temp.claim(integer, numeric, text, text, text, boolean, bigint, bigint, bigint, boolean);
DROP ROLE regress_trust_m1, regress_trust_m2, regress_trust_monitor, regress_trust_members;
TRUNCATE snowid_pool_range, snowid_pool, snowid_registry_node,
		 snowid_registry_settings, snowid_registry_role;
