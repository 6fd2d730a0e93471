--
-- snowid_health(): on the test instance (snowid.node_id = 1, no registry)
-- the generator issues and no lease is shown; striped tickets near their
-- end turn warning (under 1 % left), then critical (none left); rows come
-- critical first, then warning, then ok, the shortest issues_for first
-- within each; a member of pg_monitor that is not a superuser reads every
-- row, positions of tickets it has no privilege on included; others may
-- not call it.  (A registry, its lease and pools: TAP 052 and 068; a clock
-- behind the IDs: TAP 010; no node ID: TAP 004.)
--

-- The generator alone, and its layout's end decades away.
SELECT component, name, status, issues_for > '1 year' AS beyond_a_year, reason
  FROM snowid_health();
SELECT state FROM snowid_registry_status();

-- Tickets near the end of integer: 1,000 values, blocks of 10; 10 values
-- of shard 1 of 3; a bigint ticket far from its end.
SELECT snowid_ticket_create('health_near', block => 10, start => 2147483647 - 999,
							type => 'integer');
SELECT snowid_ticket_create('health_shard', shard => 1, shards => 3, block => 2,
							start => 2147483647 - 29, type => 'integer');
SELECT snowid_ticket_create('health_big');
SELECT component, name, status, issues_for IS NULL AS unbounded, reason
  FROM snowid_health() WHERE component = 'ticket';

-- 9 of 1,000 left (under 1 %): warning, no bound known (no rate).
SELECT count(snowid_ticket_next('health_near')) FROM generate_series(1, 991);
SELECT values_left FROM snowid_tickets WHERE ticket = 'health_near'::regclass;
SELECT component, name, status, issues_for, reason
  FROM snowid_health() WHERE status <> 'ok';
-- 10 left of 1,000 is 1 %: still ok.
SELECT snowid_ticket_create('health_edge', block => 10, start => 2147483647 - 999,
							type => 'integer');
SELECT count(snowid_ticket_next('health_edge')) FROM generate_series(1, 990);
SELECT name, status FROM snowid_health() WHERE name = 'public.health_edge';

-- None left: critical, issuing for 0; the next value fails.
SELECT count(snowid_ticket_next('health_near')) FROM generate_series(1, 9);
SELECT count(snowid_ticket_next('health_shard')) FROM generate_series(1, 10);
SELECT snowid_ticket_next('health_near');
SELECT component, name, status, issues_for, reason
  FROM snowid_health() WHERE status <> 'ok';

-- The order: critical, warning, ok; within a status the shortest
-- issues_for first, NULL (no bound) last; then component and name.
SELECT snowid_ticket_create('health_warn', block => 10, start => 2147483647 - 999,
							type => 'integer');
SELECT count(snowid_ticket_next('health_warn')) FROM generate_series(1, 995);
SELECT n, component, name, status, issues_for IS NULL AS unbounded
  FROM snowid_health() WITH ORDINALITY AS h(component, name, status, issues_for, reason, n);
SELECT bool_and(coalesce((prev_rank, prev_seconds) <= (rank, seconds), true)) AS ordered
  FROM (SELECT rank, seconds, lag(rank) OVER (ORDER BY n) AS prev_rank,
			   lag(seconds) OVER (ORDER BY n) AS prev_seconds
		  FROM (SELECT n, CASE status WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END AS rank,
					   coalesce(date_part('epoch', issues_for), 'Infinity') AS seconds
				  FROM snowid_health() WITH ORDINALITY
						 AS h(component, name, status, issues_for, reason, n)) s) o;

-- Who may call it: pg_monitor (not PUBLIC).  A member of pg_monitor that
-- is not a superuser, with no privilege on the ticket sequences, reads
-- every row as a superuser does; it reads no position of the tickets
-- itself.  It runs as the extension's owner, on pg_catalog's path.
SELECT p.prosecdef, p.proconfig, p.provolatile, p.proparallel,
	   has_function_privilege('public', p.oid, 'EXECUTE') AS public_may,
	   has_function_privilege('pg_monitor', p.oid, 'EXECUTE') AS pg_monitor_may
  FROM pg_proc p WHERE p.oid = 'snowid_health()'::regprocedure;
CREATE ROLE regress_health_monitor LOGIN IN ROLE pg_monitor;
CREATE ROLE regress_health_other LOGIN;
CREATE TEMP TABLE health_as_superuser AS
SELECT component, name, status, issues_for, reason FROM snowid_health();
GRANT SELECT ON health_as_superuser TO regress_health_monitor;
SET ROLE regress_health_monitor;
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;
SELECT values_left FROM snowid_tickets WHERE ticket = 'health_near'::regclass;
SELECT component, name, status FROM snowid_health();
SELECT count(*) AS differences
  FROM ((SELECT component, name, status, reason FROM snowid_health()
		 EXCEPT SELECT component, name, status, reason FROM health_as_superuser)
		UNION ALL
		(SELECT component, name, status, reason FROM health_as_superuser
		 EXCEPT SELECT component, name, status, reason FROM snowid_health())) d;
RESET ROLE;
SET ROLE regress_health_other;
SELECT * FROM snowid_health();
RESET ROLE;

DROP TABLE health_as_superuser;
DROP ROLE regress_health_monitor, regress_health_other;
DROP SEQUENCE health_near, health_shard, health_big, health_edge, health_warn;
SELECT component, status FROM snowid_health();
