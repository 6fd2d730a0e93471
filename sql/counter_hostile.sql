-- Counters per key under a hostile search_path: a role with CREATE on a
-- schema that comes first in the caller's path plants operators,
-- functions and tables named like those snowid's internal statements use.
-- Every value still comes from snowid's own rows, through pg_catalog's
-- operators; the planted objects are never called nor written.
\set VERBOSITY terse
CREATE ROLE counter_hostile;
CREATE SCHEMA evil AUTHORIZATION counter_hostile;
SET ROLE counter_hostile;
CREATE TABLE evil.calls (what text);
CREATE FUNCTION evil.always(text, text) RETURNS boolean
  LANGUAGE sql AS $$INSERT INTO evil.calls VALUES ('='); SELECT true$$;
CREATE FUNCTION evil.always(regclass, regclass) RETURNS boolean
  LANGUAGE sql AS $$INSERT INTO evil.calls VALUES ('='); SELECT true$$;
CREATE FUNCTION evil.always(oid, oid) RETURNS boolean
  LANGUAGE sql AS $$INSERT INTO evil.calls VALUES ('='); SELECT true$$;
CREATE FUNCTION evil.always(bigint, bigint) RETURNS boolean
  LANGUAGE sql AS $$INSERT INTO evil.calls VALUES ('<'); SELECT true$$;
CREATE FUNCTION evil.minus(bigint, bigint) RETURNS bigint
  LANGUAGE sql AS $$INSERT INTO evil.calls VALUES ('+'); SELECT $1 - $2$$;
CREATE OPERATOR evil.= (leftarg = text, rightarg = text, function = evil.always);
CREATE OPERATOR evil.= (leftarg = regclass, rightarg = regclass, function = evil.always);
CREATE OPERATOR evil.= (leftarg = oid, rightarg = oid, function = evil.always);
CREATE OPERATOR evil.+ (leftarg = bigint, rightarg = bigint, function = evil.minus);
CREATE OPERATOR evil.<= (leftarg = bigint, rightarg = bigint, function = evil.always);
CREATE OPERATOR evil.< (leftarg = bigint, rightarg = bigint, function = evil.always);
CREATE TABLE evil.snowid_counter (counter regclass, type regtype, mode text, start bigint,
  block integer, stamp bigint, stripe integer, stripes integer, state regclass);
CREATE TABLE evil.snowid_counter_key (counter regclass, key text, last bigint);
GRANT ALL ON ALL TABLES IN SCHEMA evil TO PUBLIC;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
RESET ROLE;
SET search_path = evil, public;
SELECT snowid_counter_create('public.hostile_gap') IS NOT NULL AS created;
SELECT snowid_counter_create('public.hostile_fast', mode => 'fast', block => 2) IS NOT NULL AS created;
SELECT snowid_counter_next('hostile_gap', 'a') AS a1, snowid_counter_next('hostile_gap', 'a') AS a2,
       snowid_counter_next('hostile_gap', 'b') AS b1;
SELECT array_agg(snowid_counter_next('hostile_fast', 'a')) AS fast_a,
       min(snowid_counter_next('hostile_fast', 'b')) AS fast_b
  FROM generate_series(1, 5);
SELECT snowid_counter_current('hostile_gap', 'a') AS cur_a, snowid_counter_current('hostile_gap', 'zz') AS cur_none;
SELECT snowid_counter_restart('hostile_gap', 'a', 1);
SELECT snowid_counter_restart('hostile_gap', 'a', 10);
SELECT snowid_counter_next('hostile_gap', 'a') AS after_restart;
SELECT snowid_counter_restart('hostile_fast', 'a', 100);
SELECT snowid_counter_next('hostile_fast', 'a') AS fast_after_restart;
SELECT snowid_counter_drop_key('hostile_gap', 'b') AS dropped, snowid_counter_drop_key('hostile_gap', 'nope') AS none;
SELECT snowid_counter_next('hostile_gap', 'b') AS b_again;
SELECT k.key, k.last FROM public.snowid_counter_key k
 WHERE k.counter OPERATOR(pg_catalog.=) 'public.hostile_gap'::regclass ORDER BY k.key;
SELECT snowid_counter_drop('hostile_gap');
SELECT snowid_counter_drop('hostile_fast');
RESET search_path;
SELECT (SELECT count(*) FROM evil.calls) AS planted_calls,
       (SELECT count(*) FROM evil.snowid_counter) AS planted_counters,
       (SELECT count(*) FROM evil.snowid_counter_key) AS planted_keys,
       (SELECT count(*) FROM snowid_counter_key
         WHERE counter::text LIKE '%hostile%') AS rows_left;
DROP SCHEMA evil CASCADE;
DROP ROLE counter_hostile;
