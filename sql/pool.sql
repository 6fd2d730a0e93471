--
-- Pools on the registry: snowid_pool_create, and snowid_pool_grant,
-- snowid_pool_report and snowid_pool_return called directly, as members'
-- background workers call them, by made-up members holding nodes 1 and 2
-- (system identifiers 111 and 222, starts s1 and s2).  Only pools of this
-- registry; upstream pools need a second server (TAP).  No timestamp is
-- printed.
--
\pset null '(null)'
-- No grace here: the registry grants at once after its server's start or
-- snowid's creation (TAP 059 tests the grace).
ALTER TABLE snowid_registry_settings ALTER COLUMN reassert_grace SET DEFAULT '0';

-- Node leases, claimed as the registry test does.
CREATE FUNCTION pg_temp.claim(p_node integer)
RETURNS text
LANGUAGE sql AS $$
SELECT c.result
  FROM snowid_registry_claim(p_node, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c' || p_node,
							 'host' || p_node, 5432, p_node * 111, 's' || p_node,
							 rpad('s' || p_node, 32, '#'), NULL, false, 600000,
							 5000, 1000, NULL) c
$$;
-- A grant as the member holding node p_node asks for it.
CREATE FUNCTION pg_temp.grant(p_pool text, p_node integer, p_request text,
							  p_want bigint,
							  p_held_first bigint[] DEFAULT '{}',
							  p_held_last bigint[] DEFAULT '{}')
RETURNS TABLE (result text, first_value bigint, last_value bigint,
			   type regtype, maxvalue bigint, start bigint,
			   values_left bigint, detail text)
LANGUAGE sql AS $$
SELECT g.*
  FROM snowid_pool_grant(p_pool, p_node, p_node * 111, 's' || p_node,
						 rpad('s' || p_node, 32, '#'), p_request, p_want, p_held_first, p_held_last) g
$$;
CREATE FUNCTION pg_temp.give_back(p_pool text, p_node integer, p_first bigint,
								  p_from bigint)
RETURNS text
LANGUAGE sql AS $$
SELECT snowid_pool_return(p_pool, p_node, p_node * 111, 's' || p_node,
						  rpad('s' || p_node, 32, '#'), p_first, p_from)
$$;
CREATE FUNCTION pg_temp.ranges(p_pool text)
RETURNS TABLE (node_id integer, first_value bigint, last_value bigint,
			   returned boolean, returned_from bigint, reported boolean)
LANGUAGE sql AS $$
SELECT node_id, first_value, last_value, returned, returned_from, reported
  FROM snowid_pool_ranges WHERE pool = p_pool ORDER BY first_value
$$;
SELECT pg_temp.claim(1) AS node_1, pg_temp.claim(2) AS node_2;

-- Creating pools: the name comes back; the defaults are bigint from 1.
SELECT snowid_pool_create('orders');
SELECT snowid_pool_create('small.ids-2', 'integer', 2147483000);
SELECT snowid_pool_create('top', start => 9223372036854775000);
SELECT name, type, start, maxvalue, next_value, upstream,
	   created_at <= now() AS created
  FROM snowid_pool ORDER BY name COLLATE "C";
-- Errors: a name taken, empty, odd or too long, a type other than integer
-- and bigint, a start outside the type, NULL arguments.
SELECT snowid_pool_create('orders');
SELECT snowid_pool_create('');
SELECT snowid_pool_create('two words');
SELECT snowid_pool_create('-orders');
SELECT snowid_pool_create(repeat('x', 64));
SELECT snowid_pool_create('t', 'text');
SELECT snowid_pool_create('t', 'smallint');
SELECT snowid_pool_create('t', 'integer', 2147483648);
SELECT snowid_pool_create('t', 'integer', -2147483649);
-- A pool that could never serve: pooled tickets hand out no value below 0,
-- and a pool's values are 1 and more.
SELECT snowid_pool_create('t', 'integer', 0);
SELECT snowid_pool_create('t', start => -5);
SELECT snowid_pool_create('t', 'integer', -2147483648);
SELECT snowid_pool_create(NULL);
SELECT snowid_pool_create('t', start => NULL);
-- An upstream pool needs snowid.registry on this server: refused without
-- one; created on a member of a registry (make installcheck there), and
-- dropped again, so that what follows is the same on both.
DO $$
BEGIN
	PERFORM snowid_pool_create('t', upstream => true);
EXCEPTION WHEN object_not_in_prerequisite_state THEN
	IF SQLERRM <> 'an upstream pool needs a registry for this server' THEN
		RAISE;
	END IF;
END
$$;
SELECT (count(*) = 1) = (coalesce(current_setting('snowid.registry', true), '') <> '')
	   AS upstream_needs_a_registry
  FROM snowid_pool WHERE name = 't';
DELETE FROM snowid_pool WHERE name = 't';
SELECT count(*) AS pools FROM snowid_pool;

-- Grants: the lowest values never granted, to each node in turn, never
-- overlapping; the same request key from another node is another request.
SELECT * FROM pg_temp.grant('orders', 1, 'r1', 1000);
SELECT * FROM pg_temp.grant('orders', 2, 'r1', 500);
SELECT * FROM pg_temp.grant('orders', 1, 'r2', 1000);
-- A request asked again (its reply was lost) gets its own range back, not
-- a second one; the pool does not move.
SELECT * FROM pg_temp.grant('orders', 1, 'r1', 1000);
SELECT * FROM pg_temp.grant('orders', 2, 'r1', 500);
SELECT next_value FROM snowid_pool WHERE name = 'orders';
-- want 0: the pool's facts only.
SELECT * FROM pg_temp.grant('orders', 2, 'facts', 0);
SELECT * FROM pg_temp.grant('small.ids-2', 1, NULL, 0);
-- A pool the registry does not have.
SELECT * FROM pg_temp.grant('nope', 1, 'r1', 1000);
-- Nonsense requests are errors.
SELECT * FROM pg_temp.grant('orders', 1, 'r9', -1);
SELECT * FROM pg_temp.grant('orders', 1, NULL, 10);
SELECT * FROM pg_temp.grant('orders', 1, 'r9', 10, '{1,2}', '{5}');

-- Refused without the live lease of the node: a node never claimed, the
-- node of another start or another server, a released lease, an expired
-- one.  Nothing is granted.
SELECT * FROM pg_temp.grant('orders', 3, 'r1', 1000);
SELECT result, detail
  FROM snowid_pool_grant('orders', 1, 111, 's1-other', rpad('s1', 32, '#'), 'r9', 1000, '{}', '{}');
SELECT result, detail
  FROM snowid_pool_grant('orders', 1, 999, 's1', rpad('s1', 32, '#'), 'r9', 1000, '{}', '{}');
SELECT snowid_registry_release(2, 's2', rpad('s2', 32, '#'), NULL) AS released;
SELECT * FROM pg_temp.grant('orders', 2, 'r9', 1000);
SELECT pg_temp.claim(2) AS node_2;
UPDATE snowid_registry_node SET lease_until = now() - interval '1 s'
 WHERE node_id = 2;
SELECT * FROM pg_temp.grant('orders', 2, 'r9', 1000);
SELECT pg_temp.claim(2) AS node_2;
SELECT next_value FROM snowid_pool WHERE name = 'orders';

-- Giving back: node 2 gets the next range and gives its unused tail back
-- (it is at the end of the pool): returned, and the next grant starts
-- there.  A retry of the same return says returned again.
SELECT * FROM pg_temp.grant('orders', 2, 'r2', 1000);
-- Not from a start that no longer holds the node (an old primary after its
-- standby, with the same system identifier and ranges, took the node over):
-- kept, and next_value stays.
SELECT snowid_pool_return('orders', 2, 222, 'an old start', rpad('s2', 32, '#'), 2501, 3001) AS old_start;
SELECT next_value FROM snowid_pool WHERE name = 'orders';
SELECT pg_temp.give_back('orders', 2, 2501, 3001);
SELECT pg_temp.give_back('orders', 2, 2501, 3001) AS again;
SELECT next_value FROM snowid_pool WHERE name = 'orders';
SELECT * FROM pg_temp.grant('orders', 1, 'r3', 1000);
-- A tail that a grant came after stays with its node: kept.
SELECT pg_temp.give_back('orders', 1, 1501, 2001);
-- A range of another node is kept; a range the registry does not know is
-- unknown; a value outside the range is an error.
SELECT pg_temp.give_back('orders', 2, 3001, 3500);
SELECT pg_temp.give_back('orders', 1, 900000, 900001);
SELECT pg_temp.give_back('orders', 1, 3001, 4001);
-- A range given back whole makes way for the next grant from its first
-- value, which the other node gets.
SELECT pg_temp.give_back('orders', 1, 3001, 3001);
SELECT * FROM pg_temp.grant('orders', 2, 'r3', 1000);
SELECT * FROM pg_temp.ranges('orders');

-- A registry that forgot grants (a failover with asynchronous
-- replication): node 1 reports ranges it holds that the registry does not
-- know.  They are recorded and the pool moves above them, so the next
-- grant does not overlap them.  Ranges the registry knows, ranges outside
-- the pool's values, unknown pools and reports from a start that does not
-- hold the node record nothing.
SELECT snowid_pool_report(1, 111, 's1', rpad('s1', 32, '#'), '{orders,orders,orders,nope,orders}',
						  '{4001,6001,1,1,0}', '{5000,7000,1000,10,5}') AS recorded;
SELECT next_value FROM snowid_pool WHERE name = 'orders';
SELECT snowid_pool_report(1, 111, 's1', rpad('s1', 32, '#'), '{orders}', '{6001}', '{7000}') AS recorded;
SELECT snowid_pool_report(1, 111, 's-old', rpad('s1', 32, '#'), '{orders}', '{8001}', '{9000}') AS recorded;
SELECT snowid_pool_report(1, 111, 's1', rpad('s1', 32, '#'), '{orders}', '{8001}', '{9000,9001}');
SELECT * FROM pg_temp.grant('orders', 2, 'r4', 1000);
-- The ranges held come with the grant too: reported first, then granted
-- above them.
SELECT * FROM pg_temp.grant('orders', 1, 'r4', 1000, '{8001,9001}', '{9000,9500}');
SELECT * FROM pg_temp.ranges('orders');
-- No two ranges still held overlap.
SELECT count(*) AS overlaps
  FROM snowid_pool_range a
  JOIN snowid_pool_range b ON a.pool = b.pool AND a.first_value < b.first_value
 WHERE a.pool = 'orders'
   AND b.first_value <= coalesce(a.returned_from - 1, a.last_value);

-- snowid_pool_owner: the node whose range holds a value; a given back
-- value belongs to the range granted after.
SELECT v, snowid_pool_owner('orders', v) AS node
  FROM unnest('{1,1000,1001,1500,1501,2600,3000,3001,4500,6500,9000,9600,10600,10601}'::bigint[]) AS v;
SELECT snowid_pool_owner('nope', 1), snowid_pool_owner('orders', NULL);

-- An integer pool near 2^31-1 used up by grants of 1000: a quarter of
-- what is left near the end, at least 64, then the rest, then empty.
-- Nothing above 2147483647.
SELECT g, r.result, r.first_value, r.last_value,
	   r.last_value - r.first_value + 1 AS n, r.values_left, r.detail
  FROM generate_series(1, 10) g
 CROSS JOIN LATERAL pg_temp.grant('small.ids-2', 1 + g % 2, 'x' || g, 1000) r;
SELECT * FROM pg_temp.grant('small.ids-2', 1, 'x11', 1000);
SELECT count(*) AS ranges, sum(last_value - first_value + 1) AS granted,
	   min(first_value), max(last_value)
  FROM snowid_pool_range WHERE pool = 'small.ids-2';
SELECT next_value FROM snowid_pool WHERE name = 'small.ids-2';
-- The same at the top of bigint, where next_value + n would overflow.
SELECT g, r.result, r.first_value, r.last_value,
	   r.last_value - r.first_value + 1 AS n, r.values_left
  FROM generate_series(1, 9) g
 CROSS JOIN LATERAL pg_temp.grant('top', 1 + g % 2, 'x' || g, 300) r;
SELECT next_value FROM snowid_pool WHERE name = 'top';
-- The last range, up to the maximum, gives back its tail; it is granted
-- again, to the last value.
SELECT pg_temp.give_back('top', 1, 9223372036854775745, 9223372036854775797);
SELECT next_value FROM snowid_pool WHERE name = 'top';
SELECT * FROM pg_temp.grant('top', 2, 'y1', 300);
SELECT * FROM pg_temp.grant('top', 2, 'y2', 300);
SELECT snowid_pool_owner('top', 9223372036854775807) AS owner_of_max;
-- A range reported up to the maximum uses the pool up, without going past
-- it.
SELECT snowid_pool_create('edge', start => 9223372036854775800);
SELECT snowid_pool_report(1, 111, 's1', rpad('s1', 32, '#'), '{edge}', '{9223372036854775805}',
						  '{9223372036854775807}') AS recorded;
SELECT next_value FROM snowid_pool WHERE name = 'edge';
SELECT result, first_value, values_left FROM pg_temp.grant('edge', 2, 'e1', 10);

-- The views.
SELECT name, type, start, maxvalue, next_value, values_left, upstream,
	   granted_last_hour, time_left
  FROM snowid_pools ORDER BY name COLLATE "C";
SELECT pool, node_id, holder, first_value, last_value,
	   granted_at <= now() AS granted, returned, returned_from, reported
  FROM snowid_pool_ranges WHERE pool = 'orders' ORDER BY first_value;

-- Members call the grant, report and return functions as a role granted
-- EXECUTE on them; nobody else can, nor write the tables.  The views and
-- snowid_pool_owner are for pg_monitor.
CREATE ROLE regress_pool_other;
CREATE ROLE regress_pool_monitor IN ROLE pg_monitor;
SET ROLE regress_pool_other;
SELECT snowid_pool_create('mine');
SELECT * FROM snowid_pool_grant('orders', 1, 111, 's1', rpad('s1', 32, '#'), 'z', 10, '{}', '{}');
SELECT snowid_pool_report(1, 111, 's1', rpad('s1', 32, '#'), '{}', '{}', '{}');
SELECT snowid_pool_return('orders', 1, 111, 's1', rpad('s1', 32, '#'), 1, 1);
SELECT snowid_pool_owner('orders', 1);
SELECT count(*) FROM snowid_pools;
UPDATE snowid_pool SET next_value = 1;
RESET ROLE;
SET ROLE regress_pool_monitor;
SELECT snowid_pool_owner('orders', 1);
SELECT count(*) FROM snowid_pools;
SELECT count(*) FROM snowid_pool_ranges;
RESET ROLE;
DROP ROLE regress_pool_other, regress_pool_monitor;

TRUNCATE snowid_pool_range, snowid_pool, snowid_registry_node,
		 snowid_registry_settings;
