-- snowid_ticket_next(text): the ticket named by text, looked up in the
-- search_path when a value is taken.  The bare literal resolves to it.
SET client_min_messages = warning;
CREATE SCHEMA tn_one;
CREATE SCHEMA tn_two;
RESET client_min_messages;
SELECT snowid_ticket_create('tn_one.tn', shard => 0, shards => 2, block => 10);
SELECT snowid_ticket_create('tn_two.tn', shard => 1, shards => 2, block => 10);

-- Which function a bare literal calls (the default shows ::text), and what
-- a default depends on.
CREATE TABLE tn_orders (id bigint DEFAULT snowid_ticket_next('tn_one.tn'),
						bound bigint DEFAULT snowid_ticket_next('tn_one.tn'::regclass),
						note text);
SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) AS default_expr,
	   (SELECT string_agg(dep.refobjid::regclass::text, ', ')
		  FROM pg_depend dep
		 WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
		   AND dep.refclassid = 'pg_class'::regclass
		   AND dep.refobjid <> 'tn_orders'::regclass) AS depends_on_relations
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
 WHERE d.adrelid = 'tn_orders'::regclass ORDER BY a.attnum;
INSERT INTO tn_orders (note) SELECT 'row ' || g FROM generate_series(1, 3) g;
SELECT id, bound FROM tn_orders ORDER BY id;

-- The search_path decides, at every call.
SET search_path = tn_one, public;
SELECT snowid_ticket_next('tn') AS from_one;
SET search_path = tn_two, public;
SELECT snowid_ticket_next('tn') AS from_two;
-- a prepared statement follows the search_path too
PREPARE tn_take AS SELECT snowid_ticket_shard('tn_one.tn', snowid_ticket_next('tn')) AS shard;
EXECUTE tn_take;
SET search_path = tn_one, public;
EXECUTE tn_take;
DEALLOCATE tn_take;
-- one statement, many rows, one call site
SELECT count(DISTINCT v) AS distinct_values,
	   bool_and(snowid_ticket_shard('tn_one.tn', v) = 0) AS all_shard_0
  FROM (SELECT snowid_ticket_next('tn') AS v FROM generate_series(1, 25)) s;

-- The catalogs decide: a dropped ticket is not taken from a stale answer,
-- the next one on the path is; a new one in front of it is found.
SET search_path = tn_one, tn_two, public;
SELECT snowid_ticket_shard('tn_two.tn', snowid_ticket_next('tn')) AS shard_before_drop;
DROP SEQUENCE tn_one.tn CASCADE;
SELECT snowid_ticket_shard('tn_two.tn', snowid_ticket_next('tn')) AS shard_after_drop;
SELECT snowid_ticket_create('tn_one.tn', shard => 0, shards => 2, block => 10, start => 1001);
SELECT snowid_ticket_next('tn') AS from_new_one;
ALTER SEQUENCE tn_one.tn RENAME TO tn_renamed;
SELECT snowid_ticket_shard('tn_two.tn', snowid_ticket_next('tn')) AS shard_after_rename;
ALTER SEQUENCE tn_one.tn_renamed RENAME TO tn;
ALTER SCHEMA tn_one RENAME TO tn_uno;
SELECT snowid_ticket_shard('tn_two.tn', snowid_ticket_next('tn')) AS shard_after_schema_rename;
ALTER SCHEMA tn_uno RENAME TO tn_one;
SELECT snowid_ticket_next('tn') AS from_one_again;

-- Errors: no such name, not a ticket, a bad name; a name longer than the
-- cache keeps works.
SELECT snowid_ticket_next('tn_nowhere');
SELECT snowid_ticket_next('  "TN" . "Nowhere"  ');
CREATE SEQUENCE tn_two.plain;
SELECT snowid_ticket_next('plain');
SELECT snowid_ticket_next('tn_one.tn.x.y');
SELECT snowid_ticket_next('"unterminated');
SELECT snowid_ticket_next(repeat(' ', 300) || 'tn_two . tn') > 0 AS long_name;
SELECT snowid_ticket_next(NULL::text) IS NULL AS strict;

-- Privileges: USAGE on the schema of a qualified name, and USAGE or UPDATE
-- on the sequence, for the user of each call, never from a cached answer.
CREATE ROLE regress_tn_user;
GRANT USAGE ON SCHEMA public TO regress_tn_user;
SELECT snowid_ticket_next('tn_two.tn') > 0 AS superuser_takes;
SET ROLE regress_tn_user;
SELECT snowid_ticket_next('tn_two.tn');
RESET ROLE;
GRANT USAGE ON SCHEMA tn_two TO regress_tn_user;
SET ROLE regress_tn_user;
SELECT snowid_ticket_next('tn_two.tn');
RESET ROLE;
GRANT USAGE ON SEQUENCE tn_two.tn TO regress_tn_user;
SET ROLE regress_tn_user;
SELECT snowid_ticket_next('tn_two.tn') > 0 AS user_takes;
RESET ROLE;
REVOKE USAGE ON SCHEMA tn_two FROM regress_tn_user;
SET ROLE regress_tn_user;
SELECT snowid_ticket_next('tn_two.tn');
RESET ROLE;
-- EXECUTE as the regclass form's (the update copies those: see upgrade)
SELECT p.oid::regprocedure AS function,
	   has_function_privilege('regress_tn_user', p.oid, 'EXECUTE') AS any_role_may
  FROM pg_proc p WHERE p.proname = 'snowid_ticket_next' ORDER BY p.oid::regprocedure::text;

RESET search_path;
DROP TABLE tn_orders;
DROP SCHEMA tn_one, tn_two CASCADE;
REVOKE USAGE ON SCHEMA public FROM regress_tn_user;
DROP ROLE regress_tn_user;
SELECT count(*) AS rows_left FROM snowid_ticket;
