--
-- Security of ticket sequences.
--  * Users without privileges on a ticket sequence see no position of it.
--  * Privileges are checked again after ALTER ROLE and GRANT/REVOKE.
--  * Nothing the extension runs internally follows the caller's search_path:
--    not the catalog reads of snowid_ticket_next/_shard, not the SQL of
--    snowid_ticket_create, not the view, its type check or the DROP trigger,
--    not the registry's claim and release functions or its view, not the
--    pool functions or views, not snowid_health(), and an
--    install or an update binds nothing a user created.
--

-- A user without SELECT or USAGE on a ticket sequence sees its settings,
-- but no position: blocks_reserved, cached_* and values_left are NULL, in
-- the view and in snowid_ticket_cache().
SELECT snowid_ticket_create('sec_p', 0, 1, 10);
SELECT snowid_ticket_next('sec_p');
CREATE ROLE regress_nopriv;
SET ROLE regress_nopriv;
SELECT ticket, blocks_total, blocks_reserved, cached_first, cached_last,
	   cached_values, values_left
  FROM snowid_tickets WHERE ticket = 'sec_p'::regclass;
SELECT * FROM snowid_ticket_cache() WHERE ticket = 'sec_p'::regclass;
RESET ROLE;
GRANT USAGE ON SEQUENCE sec_p TO regress_nopriv;
SET ROLE regress_nopriv;
SELECT ticket, blocks_total, blocks_reserved, cached_first, cached_last,
	   cached_values, values_left
  FROM snowid_tickets WHERE ticket = 'sec_p'::regclass;
SELECT * FROM snowid_ticket_cache() WHERE ticket = 'sec_p'::regclass;
RESET ROLE;
REVOKE USAGE ON SEQUENCE sec_p FROM regress_nopriv;
DROP ROLE regress_nopriv;

-- Privileges are checked again when they change, as nextval does: a
-- superuser made NOSUPERUSER, a member made NOINHERIT, a membership or a
-- privilege revoked.
CREATE ROLE regress_super SUPERUSER;
SET SESSION AUTHORIZATION regress_super;
SELECT snowid_ticket_next('sec_p') > 0 AS taken;
RESET SESSION AUTHORIZATION;
ALTER ROLE regress_super NOSUPERUSER;
SET SESSION AUTHORIZATION regress_super;
SELECT nextval('sec_p');
SELECT snowid_ticket_next('sec_p');
RESET SESSION AUTHORIZATION;
DROP ROLE regress_super;
CREATE ROLE regress_holder;
GRANT USAGE ON SEQUENCE sec_p TO regress_holder;
CREATE ROLE regress_member IN ROLE regress_holder;
SET SESSION AUTHORIZATION regress_member;
SELECT snowid_ticket_next('sec_p') > 0 AS taken;
RESET SESSION AUTHORIZATION;
ALTER ROLE regress_member NOINHERIT;
SET SESSION AUTHORIZATION regress_member;
-- Up to 15, NOINHERIT takes the privileges of regress_holder away; from 16
-- on it only sets the default for new grants.  Either way snowid_ticket_next
-- must do what nextval does.
DO $$
DECLARE
	by_nextval boolean := true;
	by_ticket boolean := true;
BEGIN
	BEGIN
		PERFORM pg_catalog.nextval('sec_p'::pg_catalog.regclass);
	EXCEPTION WHEN insufficient_privilege THEN
		by_nextval := false;
	END;
	BEGIN
		PERFORM snowid_ticket_next('sec_p'::pg_catalog.regclass);
	EXCEPTION WHEN insufficient_privilege THEN
		by_ticket := false;
	END;
	IF by_nextval IS DISTINCT FROM by_ticket THEN
		RAISE EXCEPTION 'after NOINHERIT nextval is %, snowid_ticket_next is %',
			CASE WHEN by_nextval THEN 'allowed' ELSE 'denied' END,
			CASE WHEN by_ticket THEN 'allowed' ELSE 'denied' END;
	END IF;
	RAISE NOTICE 'after NOINHERIT snowid_ticket_next does what nextval does';
END
$$;
RESET SESSION AUTHORIZATION;
ALTER ROLE regress_member INHERIT;
SET SESSION AUTHORIZATION regress_member;
SELECT snowid_ticket_next('sec_p') > 0 AS taken;
RESET SESSION AUTHORIZATION;
REVOKE regress_holder FROM regress_member;
SET SESSION AUTHORIZATION regress_member;
SELECT snowid_ticket_next('sec_p');
RESET SESSION AUTHORIZATION;
GRANT UPDATE ON SEQUENCE sec_p TO regress_member;
SET SESSION AUTHORIZATION regress_member;
SELECT snowid_ticket_next('sec_p') > 0 AS taken;
RESET SESSION AUTHORIZATION;
REVOKE UPDATE ON SEQUENCE sec_p FROM regress_member;
SET SESSION AUTHORIZATION regress_member;
SELECT snowid_ticket_next('sec_p');
RESET SESSION AUTHORIZATION;
-- A privilege held through pg_database_owner goes with the database's
-- ownership: after ALTER DATABASE ... OWNER TO another role, nextval is
-- refused to the former owner, and so must snowid_ticket_next be.
CREATE ROLE regress_dbowner;
GRANT USAGE ON SEQUENCE sec_p TO pg_database_owner;
CREATE TEMP TABLE db_owner AS
SELECT pg_catalog.pg_get_userbyid(datdba) AS owner
  FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database();
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I OWNER TO regress_dbowner', current_database()); END $$;
SET SESSION AUTHORIZATION regress_dbowner;
SELECT snowid_ticket_next('sec_p') > 0 AS taken;
RESET SESSION AUTHORIZATION;
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I OWNER TO %I', current_database(), (SELECT owner FROM db_owner)); END $$;
DROP TABLE db_owner;
SET SESSION AUTHORIZATION regress_dbowner;
SELECT nextval('sec_p');
SELECT snowid_ticket_next('sec_p');
RESET SESSION AUTHORIZATION;
REVOKE USAGE ON SEQUENCE sec_p FROM pg_database_owner;
DROP ROLE regress_dbowner;
DROP SEQUENCE sec_p;
DROP ROLE regress_member;
DROP ROLE regress_holder;

-- A user who may create objects in public (as everyone could before
-- PostgreSQL 15) shadows, there, the operators, types and functions that
-- internal SQL could use.  Each of them records that it ran, and as whom.
CREATE ROLE regress_hostile;
GRANT CREATE ON SCHEMA public TO regress_hostile;
SET ROLE regress_hostile;
CREATE TABLE hostile_ran (what text, who name);
GRANT INSERT ON hostile_ran TO PUBLIC;
CREATE FUNCTION hostile(what text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.hostile_ran VALUES (what, current_user);
	RAISE WARNING 'hostile code ran as %: %', current_user, what;
	RETURN true;
END
$$;
DO $$
DECLARE
	o record;
	fn text;
	i integer := 0;
BEGIN
	-- operators pg_catalog lacks (=(regclass, regclass), ...) or has with
	-- the same arguments (=(oid, oid), ...)
	FOR o IN SELECT * FROM (VALUES
		('=', 'pg_catalog.regclass', 'pg_catalog.regclass', 'boolean'),
		('=', 'pg_catalog.regtype', 'pg_catalog.regtype', 'boolean'),
		('=', 'pg_catalog.oid', 'pg_catalog.oid', 'boolean'),
		('=', 'pg_catalog.oid', 'pg_catalog.regclass', 'boolean'),
		('=', 'pg_catalog.regclass', 'pg_catalog.oid', 'boolean'),
		('=', 'bigint', 'bigint', 'boolean'),
		('+', 'bigint', 'integer', 'bigint'),
		('+', 'numeric', 'integer', 'numeric'),
		('-', 'numeric', 'bigint', 'numeric'),
		('-', 'numeric', 'integer', 'numeric'),
		('*', 'numeric', 'integer', 'numeric'),
		('*', 'bigint', 'integer', 'bigint'),
		-- what the registry's functions and view use
		('=', 'text', 'text', 'boolean'),
		('<>', 'text', 'text', 'boolean'),
		('=', 'numeric', 'numeric', 'boolean'),
		('=', 'integer', 'integer', 'boolean'),
		('<', 'integer', 'integer', 'boolean'),
		('>', 'integer', 'integer', 'boolean'),
		('<=', 'integer', 'integer', 'boolean'),
		('>=', 'integer', 'integer', 'boolean'),
		('+', 'integer', 'integer', 'integer'),
		('<', 'timestamptz', 'timestamptz', 'boolean'),
		('<=', 'timestamptz', 'timestamptz', 'boolean'),
		('>=', 'timestamptz', 'timestamptz', 'boolean'),
		('-', 'timestamptz', 'timestamptz', 'interval'),
		('+', 'timestamptz', 'interval', 'timestamptz'),
		('-', 'timestamptz', 'interval', 'timestamptz'),
		('*', 'bigint', 'interval', 'interval'),
		('<=', 'bigint', 'integer', 'boolean'),
		('/', 'bigint', 'numeric', 'numeric'),
		-- what the pool functions and views use
		('>', 'numeric', 'integer', 'boolean'),
		('>=', 'numeric', 'numeric', 'boolean'),
		('+', 'numeric', 'numeric', 'numeric'),
		('-', 'numeric', 'numeric', 'numeric'),
		('/', 'numeric', 'numeric', 'numeric'),
		('+', 'bigint', 'bigint', 'bigint'),
		('-', 'bigint', 'bigint', 'bigint'),
		('<', 'bigint', 'bigint', 'boolean'),
		('<=', 'bigint', 'bigint', 'boolean'),
		('>=', 'bigint', 'bigint', 'boolean'),
		('>', 'timestamptz', 'timestamptz', 'boolean'),
		('*', 'interval', 'double precision', 'interval'),
		('!~', 'text', 'text', 'boolean'),
		-- what snowid_health() uses
		('<', 'interval', 'interval', 'boolean'),
		('<', 'numeric', 'numeric', 'boolean'),
		('=', 'numeric', 'integer', 'boolean'),
		('>', 'double precision', 'bigint', 'boolean'),
		-- last: the loop's own || would find it
		('||', 'text', 'bigint', 'text')) AS v(op, l, r, res)
	LOOP
		i := i + 1;
		fn := 'public.hostile_op' || i;
		EXECUTE format('CREATE FUNCTION %s(%s, %s) RETURNS %s LANGUAGE plpgsql '
					   'AS $f$BEGIN PERFORM public.hostile(%L); RETURN NULL; END$f$',
					   fn, o.l, o.r, o.res, o.l || ' ' || o.op || ' ' || o.r);
		EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)',
					   o.op, o.l, o.r, fn);
	END LOOP;
	-- functions: where pg_catalog has none with these arguments (div) or
	-- one that a path with public first would hide
	FOR o IN SELECT * FROM (VALUES
		('div', 'numeric, integer', 'numeric'),
		('div', 'numeric, numeric', 'numeric'),
		('has_sequence_privilege', 'pg_catalog.regclass, text', 'boolean'),
		('has_sequence_privilege', 'pg_catalog.oid, text', 'boolean'),
		('pg_sequence_last_value', 'pg_catalog.regclass', 'bigint'),
		('nextval', 'pg_catalog.regclass', 'bigint'),
		('setval', 'pg_catalog.regclass, bigint', 'bigint'),
		('pg_extension_config_dump', 'pg_catalog.regclass, text', 'void'),
		('format_type', 'pg_catalog.oid, integer', 'text'),
		('quote_ident', 'text', 'text'),
		('now', '', 'timestamptz'),
		('format', 'text, text', 'text'),
		('format', 'text, text, text', 'text'),
		('format', 'text, integer, text, numeric, timestamptz', 'text'),
		('concat', 'text, text', 'text'),
		('round', 'numeric, integer', 'numeric'),
		('trim_scale', 'numeric', 'numeric'),
		('extract', 'text, interval', 'numeric'),
		('greatest', 'bigint, bigint', 'bigint'),
		('justify_hours', 'interval', 'interval'),
		('ceil', 'numeric', 'numeric'),
		('octet_length', 'text', 'integer'),
		('cardinality', 'bigint[]', 'integer'),
		('cardinality', 'text[]', 'integer'),
		('array_fill', 'text, integer[]', 'text[]'),
		('current_setting', 'text, boolean', 'text'),
		-- what snowid_health() uses
		('clock_timestamp', '', 'timestamptz'),
		('pg_is_in_recovery', '', 'boolean'),
		('date_trunc', 'text, interval', 'interval'),
		('to_char', 'timestamp, text', 'text'),
		('format', 'text, text, integer', 'text'),
		('format', 'text, text, numeric, numeric, integer', 'text')) AS v(name, args, res)
	LOOP
		EXECUTE format('CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql '
					   'AS $f$BEGIN PERFORM public.hostile(%L); RETURN %s; END$f$',
					   o.name, o.args, o.res, o.name || '(' || o.args || ')',
					   CASE WHEN o.res = 'void' THEN '' ELSE 'NULL' END);
	END LOOP;
END
$$;
-- types: domains named oid and regclass whose check runs hostile code, and
-- a type named regtype with casts from oid and to pg_catalog.regtype
CREATE DOMAIN oid AS pg_catalog.oid CHECK (public.hostile('domain oid'));
CREATE DOMAIN regclass AS pg_catalog.oid CHECK (public.hostile('domain regclass'));
CREATE TYPE regtype AS (t pg_catalog.oid);
CREATE FUNCTION hostile_to_regtype(pg_catalog.oid) RETURNS public.regtype
LANGUAGE plpgsql AS $$BEGIN PERFORM public.hostile('cast to regtype'); RETURN ROW($1); END$$;
CREATE FUNCTION hostile_from_regtype(public.regtype) RETURNS pg_catalog.regtype
LANGUAGE plpgsql AS $$BEGIN PERFORM public.hostile('cast from regtype'); RETURN ($1).t; END$$;
CREATE CAST (pg_catalog.oid AS public.regtype) WITH FUNCTION hostile_to_regtype(pg_catalog.oid);
CREATE CAST (public.regtype AS pg_catalog.regtype)
	WITH FUNCTION hostile_from_regtype(public.regtype) AS ASSIGNMENT;
RESET ROLE;

-- What the extension's views and tables use of these objects.
CREATE FUNCTION pg_temp.snowid_uses_hostile()
RETURNS TABLE (object text, uses text)
LANGUAGE sql SET search_path = pg_catalog AS $$
WITH hostile (classid, objid) AS (
	SELECT 'pg_proc'::regclass, oid FROM pg_proc
	 WHERE proowner = 'regress_hostile'::regrole
	UNION ALL
	SELECT 'pg_operator'::regclass, oid FROM pg_operator
	 WHERE oprowner = 'regress_hostile'::regrole
	UNION ALL
	SELECT 'pg_type'::regclass, oid FROM pg_type
	 WHERE typowner = 'regress_hostile'::regrole)
SELECT DISTINCT pg_describe_object(d.classid, d.objid, 0),
	   pg_describe_object(d.refclassid, d.refobjid, 0)
  FROM pg_depend d
  JOIN hostile h ON h.classid = d.refclassid AND h.objid = d.refobjid
 WHERE (d.classid = 'pg_rewrite'::regclass AND
		d.objid IN (SELECT oid FROM pg_rewrite
					 WHERE ev_class IN (to_regclass('public.snowid_tickets'),
										to_regclass('public.snowid_registry_nodes'),
										to_regclass('public.snowid_pools'),
										to_regclass('public.snowid_pool_ranges'))))
	OR (d.classid = 'pg_constraint'::regclass AND
		d.objid IN (SELECT oid FROM pg_constraint
					 WHERE conrelid IN (to_regclass('public.snowid_ticket'),
										to_regclass('public.snowid_registry_node'),
										to_regclass('public.snowid_registry_settings'),
										to_regclass('public.snowid_pool'),
										to_regclass('public.snowid_pool_range'))))
 ORDER BY 1, 2
$$;

-- Version 1.1, installed with these objects present, binds some of them
-- into its view and its type check; the update to the current version
-- replaces both, and a fresh install binds none.
DROP EXTENSION snowid;
CREATE EXTENSION snowid VERSION '1.1';
SELECT * FROM pg_temp.snowid_uses_hostile();
ALTER EXTENSION snowid UPDATE;
SELECT * FROM pg_temp.snowid_uses_hostile();
DROP EXTENSION snowid;
CREATE EXTENSION snowid;
SELECT * FROM pg_temp.snowid_uses_hostile();
TRUNCATE hostile_ran;

-- A superuser with public first on the path uses tickets: creates one,
-- takes values through a column default and directly, decodes one, reads
-- the view and the cache, drops the ticket.  No hostile code runs.
SET search_path = public, pg_catalog;
SELECT snowid_ticket_create('sec_t', 0, 1, 10);
CREATE TABLE sec_orders (id bigint DEFAULT snowid_ticket_next('sec_t'), note text);
INSERT INTO sec_orders (note) VALUES ('a'), ('b'), ('c');
SELECT id, note FROM sec_orders ORDER BY note;
SELECT snowid_ticket_next('sec_t');
BEGIN;
SELECT snowid_ticket_create('sec_u', 1, 2, 5, 1, 'integer');
SELECT snowid_ticket_next('sec_u');
SAVEPOINT s;
SELECT snowid_ticket_next('sec_u');
ROLLBACK TO SAVEPOINT s;
SELECT snowid_ticket_next('sec_u');
COMMIT;
SELECT snowid_ticket_shard('sec_t', 5), snowid_ticket_shard('sec_u', 6);
-- The catalog is read in C, in parallel workers too.
-- (force_parallel_mode is debug_parallel_query from 16 on.)
SELECT pg_catalog.set_config(CASE WHEN pg_catalog.current_setting('server_version_num')::int OPERATOR(pg_catalog.>=) 160000
							 THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END,
							 'on', false) AS parallel;
SELECT snowid_ticket_shard('sec_t', 7), snowid_ticket_shard('sec_u', 8);
SELECT pg_catalog.set_config(CASE WHEN pg_catalog.current_setting('server_version_num')::int OPERATOR(pg_catalog.>=) 160000
							 THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END,
							 'off', false) AS parallel;
SELECT * FROM snowid_tickets ORDER BY ticket::pg_catalog.text COLLATE "C";
SELECT ticket, cached_first, cached_last, cached_values
  FROM snowid_ticket_cache() ORDER BY ticket::pg_catalog.text COLLATE "C";
-- The health of the generator and of both tickets, on the same path.
SELECT component, name, status, reason FROM snowid_health();
DROP TABLE sec_orders;
DROP SEQUENCE sec_t, sec_u;
SELECT count(*) AS rows_left FROM snowid_ticket;
-- No grace here: the registry grants at once after its server's start or
-- snowid's creation (TAP 059 tests the grace).
ALTER TABLE snowid_registry_settings ALTER COLUMN reassert_grace SET DEFAULT '0';
-- The same superuser runs the registry's functions through every rule and
-- reads its view (nodes 0 to 3): a claim, its renewal, a conflict, a layout
-- conflict, the lowest free node, a takeover refused and done, a release
-- and a claim above it, an expired lease taken, another node for an
-- automatic one, all nodes held.
SELECT result, node_id, detail IS NOT NULL AS detail
  FROM (VALUES (1, 's1', 111, NULL, false, false, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'),
			   (1, 's1', 111, NULL, false, false, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'),
			   (1, 's2', 222, NULL, false, false, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'),
			   (1, 's2', 222, NULL, false, false, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 11, id_bits 63'),
			   (NULL, 's2', 222, NULL, false, false, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'),
			   (1, 's1b', 111, 's1', false, false, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63'),
			   (1, 's1c', 111, NULL, false, false, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63')) AS a(node, start, sysid, pred, promoted, auto, layout)
 CROSS JOIN LATERAL snowid_registry_claim(a.node, a.auto, 3, a.layout, 'c', 'h',
										  5432, a.sysid, a.start,
										  pg_catalog.rpad(a.start, 32, '#'), a.pred,
										  a.promoted, 600000, 5000, 1000, 7) c;
UPDATE snowid_registry_node
   SET last_seen = last_seen OPERATOR(pg_catalog.-) '1 min'::pg_catalog.interval;
SELECT result, node_id, detail
  FROM snowid_registry_claim(1, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c', 'h', 5432, 111,
							 's1b', pg_catalog.rpad('s1b', 32, '#'), 's1', false,
							 600000, 5000, 1000, 8);
SELECT snowid_registry_release(1, 's1b', pg_catalog.rpad('s1b', 32, '#'), 9) AS released;
SELECT result, node_id, floor_id
  FROM snowid_registry_claim(1, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c', 'h', 5432, 333,
							 's3', pg_catalog.rpad('s3', 32, '#'), NULL, false,
							 600000, 5000, 1000, NULL);
UPDATE snowid_registry_node
   SET lease_until = pg_catalog.now() OPERATOR(pg_catalog.-) '1 min'::pg_catalog.interval
 WHERE node_id OPERATOR(pg_catalog.=) 0;
SELECT node_id, state FROM snowid_registry_nodes
 ORDER BY node_id USING OPERATOR(pg_catalog.<);
SELECT result, node_id, floor_id
  FROM snowid_registry_claim(0, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c', 'h', 5432, 444,
							 's4', pg_catalog.rpad('s4', 32, '#'), NULL, true,
							 600000, 5000, 1000, NULL);
SELECT result, node_id, detail IS NOT NULL AS detail
  FROM pg_catalog.generate_series(5, 7) AS g(sysid)
 CROSS JOIN LATERAL snowid_registry_claim(1, true, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c', 'h', 5432,
										  g.sysid, 's' OPERATOR(pg_catalog.||) g.sysid,
										  pg_catalog.rpad('s' OPERATOR(pg_catalog.||) g.sysid, 32, '#'),
										  NULL, false, 600000, 5000, 1000, NULL) c;
SELECT node_id, holder, state FROM snowid_registry_nodes
 ORDER BY node_id USING OPERATOR(pg_catalog.<);
TRUNCATE snowid_registry_node, snowid_registry_settings;
-- The same superuser runs the pool functions through every rule and reads
-- the views, with nodes 1 and 2 claimed afresh: pools created (and refused:
-- taken, odd name, bad type, start out of range, upstream without a
-- registry), grants to both nodes, a repeated request, the facts only, a
-- refusal, an unknown pool, grants shrinking near the end of an integer
-- pool, then empty, a report of a lost grant and a grant above it, tails
-- given back and kept, the owner of values.
SELECT c.result, c.node_id
  FROM (VALUES (1, 111), (2, 222)) AS a(node, sysid)
 CROSS JOIN LATERAL snowid_registry_claim(a.node, false, 3, 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63', 'c', 'h',
										  5432, a.sysid, 's' OPERATOR(pg_catalog.||) a.node,
										  pg_catalog.rpad('s' OPERATOR(pg_catalog.||) a.node, 32, '#'),
										  NULL, false, 600000, 5000, 1000, NULL) c;
SELECT snowid_pool_create('sec_big'),
	   snowid_pool_create('sec_int', 'integer', 2147483400);
DO $$
DECLARE
	args text;
BEGIN
	FOREACH args IN ARRAY ARRAY['''sec_big''', ''' x''', '''t'', ''text''',
								'''t'', ''integer'', 2147483648',
								'''t'', start => 0']
	LOOP
		BEGIN
			EXECUTE 'SELECT snowid_pool_create(' OPERATOR(pg_catalog.||) args OPERATOR(pg_catalog.||) ')';
		EXCEPTION WHEN OTHERS THEN
			RAISE NOTICE '%', SQLSTATE;
		END;
	END LOOP;
END
$$;
SELECT a.i, g.result, g.first_value, g.last_value, g.values_left,
	   g.detail IS NOT NULL AS detail
  FROM (VALUES (1, 'sec_big', 1, 'r1', 1000),
			   (2, 'sec_big', 2, 'r1', 1000),
			   (3, 'sec_big', 1, 'r1', 1000),
			   (4, 'sec_big', 1, 'f', 0),
			   (5, 'sec_big', 3, 'r1', 1000),
			   (6, 'sec_none', 1, 'r1', 1000),
			   (7, 'sec_int', 1, 'a', 1000),
			   (8, 'sec_int', 2, 'b', 1000),
			   (9, 'sec_int', 1, 'c', 1000),
			   (10, 'sec_int', 2, 'd', 1000),
			   (11, 'sec_int', 1, 'e', 1000),
			   (12, 'sec_int', 2, 'f', 1000),
			   (13, 'sec_int', 1, 'g', 1000),
			   (14, 'sec_int', 2, 'h', 1000)) AS a(i, pool, node, request, want)
 CROSS JOIN LATERAL snowid_pool_grant(a.pool, a.node, a.node OPERATOR(pg_catalog.*) 111,
									  's' OPERATOR(pg_catalog.||) a.node,
									  pg_catalog.rpad('s' OPERATOR(pg_catalog.||) a.node, 32, '#'),
									  a.request, a.want, '{}', '{}') g
 ORDER BY a.i USING OPERATOR(pg_catalog.<);
SELECT snowid_pool_report(1, 111, 's1', pg_catalog.rpad('s1', 32, '#'), '{sec_big}', '{5001}', '{6000}') AS recorded;
SELECT result, first_value, last_value
  FROM snowid_pool_grant('sec_big', 2, 222, 's2', pg_catalog.rpad('s2', 32, '#'), 'r2', 1000, '{}', '{}');
SELECT result, first_value, last_value
  FROM snowid_pool_grant('sec_big', 1, 111, 's1', pg_catalog.rpad('s1', 32, '#'), 'r2', 1000, '{7001}', '{8000}');
SELECT snowid_pool_return('sec_big', 1, 111, 's1', pg_catalog.rpad('s1', 32, '#'), 8001, 8501) AS back,
	   snowid_pool_return('sec_big', 2, 222, 's2', pg_catalog.rpad('s2', 32, '#'), 6001, 6501) AS kept;
SELECT snowid_pool_owner('sec_big', 1) AS owner_1,
	   snowid_pool_owner('sec_big', 5500) AS owner_5500,
	   snowid_pool_owner('sec_big', 8600) AS owner_8600;
SELECT name, type, next_value, values_left, granted_last_hour,
	   time_left IS NOT NULL AS time_left
  FROM snowid_pools ORDER BY name COLLATE "C";
SELECT pool, node_id, first_value, last_value, returned, returned_from, reported
  FROM snowid_pool_ranges
 ORDER BY pool COLLATE "C", first_value USING OPERATOR(pg_catalog.<);
TRUNCATE snowid_pool_range, snowid_pool, snowid_registry_node,
		 snowid_registry_settings;
RESET search_path;
SELECT count(*) AS hostile_code_ran FROM hostile_ran;
DROP CAST (pg_catalog.oid AS public.regtype);
DROP CAST (public.regtype AS pg_catalog.regtype);
DROP OWNED BY regress_hostile;
REVOKE CREATE ON SCHEMA public FROM regress_hostile;
DROP ROLE regress_hostile;
