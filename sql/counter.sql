-- Counters per key, gapless mode: values per key, reads, moves, drops,
-- privileges and bad input.
\set VERBOSITY default
-- the test before may leave an older version (replication_guard: 1.11)
SET client_min_messages = warning;
ALTER EXTENSION snowid UPDATE;
RESET client_min_messages;
SELECT snowid_counter_create('invoice_no', type => 'integer');
SELECT snowid_counter_create('public.issue_no', start => 100);
SELECT counter, type, mode, start FROM snowid_counter ORDER BY counter::text;
-- values per key, independent; a bigint key is its decimal text
SELECT snowid_counter_next('invoice_no', 'acme') AS a1,
       snowid_counter_next('invoice_no', 'acme') AS a2,
       snowid_counter_next('invoice_no', 'globex') AS g1,
       snowid_counter_next('invoice_no', 42) AS n1,
       snowid_counter_next('invoice_no', '42') AS n2,
       snowid_counter_next('issue_no', 7) AS i1;
-- a rollback gives the value back
BEGIN;
SELECT snowid_counter_next('invoice_no', 'acme');
ROLLBACK;
SELECT snowid_counter_next('invoice_no', 'acme');
-- in a table's default
CREATE TABLE invoice (tenant text, no integer DEFAULT snowid_counter_next('invoice_no', 'x'));
CREATE TABLE issue (project bigint, no bigint);
INSERT INTO issue SELECT p, snowid_counter_next('issue_no', p) FROM generate_series(1, 3) p, generate_series(1, 3);
SELECT project, array_agg(no ORDER BY no) FROM issue GROUP BY project ORDER BY project;
-- current value
SELECT snowid_counter_current('invoice_no', 'acme') AS acme,
       snowid_counter_current('invoice_no', 'nobody') AS nobody,
       snowid_counter_current('issue_no', 2) AS two;
-- forward only
SELECT snowid_counter_restart('invoice_no', 'acme', 1000);
SELECT snowid_counter_next('invoice_no', 'acme');
SELECT snowid_counter_restart('invoice_no', 'acme', 1001);
SELECT snowid_counter_restart('invoice_no', 'fresh', 50);
SELECT snowid_counter_next('invoice_no', 'fresh');
-- a key dropped starts over
SELECT snowid_counter_drop_key('invoice_no', 'globex'), snowid_counter_drop_key('invoice_no', 'globex');
SELECT snowid_counter_next('invoice_no', 'globex');
-- bad input
SELECT snowid_counter_next('no_such', 'k');
SELECT snowid_counter_next(NULL, 'k');
SELECT snowid_counter_next('invoice_no', NULL::text);
SELECT snowid_counter_next('invoice_no', repeat('k', 201));
SELECT length(repeat('k', 200)), snowid_counter_next('invoice_no', repeat('k', 200));
CREATE SEQUENCE plain_seq;
SELECT snowid_counter_next('plain_seq', 'k');
SELECT snowid_counter_next('invoice', 'k');
SELECT snowid_counter_create('bad_type', type => 'text');
SELECT snowid_counter_create('bad_mode', mode => 'slow');
SELECT snowid_counter_create('bad_block', mode => 'fast', block => 0);
SELECT snowid_counter_create('bad_block', block => 10);
SELECT snowid_counter_create('bad_block', block => 100);
SELECT snowid_counter_create('bad_block', block => 1);
SELECT snowid_counter_create('bad_start', start => NULL);
SELECT snowid_counter_create('bad_start', start => -1);
SELECT snowid_counter_create('invoice_no');
SELECT snowid_counter_create('pg_temp.tmp_counter');
SELECT snowid_counter_restart('invoice_no', 'acme', 0);
SELECT snowid_counter_restart('invoice_no', 'acme', 3000000000);
SELECT snowid_counter_restart('invoice_no', 'acme', NULL);
-- the end of an integer counter
SELECT snowid_counter_restart('invoice_no', 'end', 2147483647);
SELECT snowid_counter_next('invoice_no', 'end');
SELECT snowid_counter_next('invoice_no', 'end');
SELECT snowid_counter_current('invoice_no', 'end');
-- privileges: those of the counter's sequence
CREATE ROLE counter_user;
CREATE ROLE counter_reader;
GRANT USAGE ON SEQUENCE invoice_no TO counter_user;
GRANT SELECT ON SEQUENCE invoice_no TO counter_reader;
SET ROLE counter_user;
SELECT snowid_counter_next('invoice_no', 'acme');
SELECT snowid_counter_restart('invoice_no', 'acme', 5000);
SELECT snowid_counter_drop_key('invoice_no', 'acme');
SELECT snowid_counter_drop('invoice_no');
SELECT snowid_counter_next('issue_no', 1);
SELECT * FROM snowid_counter_key;
UPDATE snowid_counter_key SET last = 0;
RESET ROLE;
SET ROLE counter_reader;
SELECT snowid_counter_current('invoice_no', 'acme');
SELECT snowid_counter_next('invoice_no', 'acme');
RESET ROLE;
-- COMMENT ON works on the counter, as on its sequence
COMMENT ON SEQUENCE invoice_no IS 'invoice numbers per tenant';
-- drop: its rows go with it, by the function or by DROP SEQUENCE
SELECT snowid_counter_drop('invoice_no');
DROP SEQUENCE issue_no;
SELECT count(*) FROM snowid_counter;
SELECT count(*) FROM snowid_counter_key;
SELECT snowid_counter_next('invoice_no', 'acme');
-- mode fast: blocks of 3 per key from shared memory, each reserved by a
-- server process in a transaction of its own; a rollback keeps its values
-- (a gap), restart and drop_key take effect at their commit, and their
-- own transaction may not take the key's values
SELECT snowid_counter_create('order_no', mode => 'fast', block => 3);
SELECT counter, type, mode, start, block FROM snowid_counter;
SELECT array_agg(snowid_counter_next('order_no', 'shop1')) FROM generate_series(1, 7);
SELECT snowid_counter_current('order_no', 'shop1') AS cur, snowid_counter_next('order_no', 'shop2') AS other;
BEGIN;
SELECT snowid_counter_next('order_no', 'shop1');
ROLLBACK;
SELECT snowid_counter_next('order_no', 'shop1');
SELECT snowid_counter_restart('order_no', 'shop1', 5);
SELECT snowid_counter_restart('order_no', 'shop1', 100);
SELECT snowid_counter_next('order_no', 'shop1'), snowid_counter_next('order_no', 'shop1');
SELECT snowid_counter_drop_key('order_no', 'shop1');
SELECT snowid_counter_next('order_no', 'shop1');
BEGIN;
SELECT snowid_counter_restart('order_no', 'shop2', 50);
SELECT snowid_counter_next('order_no', 'shop2');
ROLLBACK;
SELECT snowid_counter_next('order_no', 'shop2');
SELECT keys >= 2 AS cached, capacity, evictions >= 0 AS counted FROM snowid_counter_cache();
SELECT snowid_counter_drop('order_no');
-- a reservation that finds the key's row locked gives up after 1 s (55P03)
SELECT snowid_counter_create('lock_no', mode => 'fast', block => 1) IS NOT NULL AS created;
SELECT snowid_counter_next('lock_no', 'k');
BEGIN;
SELECT last FROM snowid_counter_key WHERE counter = 'lock_no'::regclass FOR UPDATE;
SELECT snowid_counter_next('lock_no', 'k');
ROLLBACK;
SELECT snowid_counter_next('lock_no', 'k');
SELECT snowid_counter_drop('lock_no');
-- no user calls the reservation or its server side
SET ROLE counter_user;
SELECT snowid_counter_reserve(0, 'k', 1, 1);
SELECT snowid_counter_reserve_serve(0, 'k', 1, 1);
RESET ROLE;
-- striped (fast only): this server gives stripe k of n, start + k + i * n
SELECT snowid_counter_create('bad_no', stripe => 1);
SELECT snowid_counter_create('bad_no', mode => 'fast', stripe => 0, stripes => 0);
SELECT snowid_counter_create('bad_no', mode => 'fast', stripe => 3, stripes => 3);
SELECT snowid_counter_create('bad_no', mode => 'fast', stripe => -1, stripes => 3);
SELECT snowid_counter_create('bad_no', stripe => 1, stripes => 3);
SELECT snowid_counter_create('bad_no', 'integer', 'fast', 2147483646, NULL, 2, 3);
SELECT snowid_counter_create('bad_no', colocate_with => 'issue');
SELECT snowid_counter_create('home_no', stripe => 0, stripes => 1) IS NOT NULL AS created;
SELECT snowid_counter_next('home_no', 'k'), snowid_counter_next('home_no', 'k');
SELECT snowid_counter_create('stripe_no', mode => 'fast', start => 10, block => 2,
                             stripe => 1, stripes => 3) IS NOT NULL AS created;
SELECT stripe, stripes FROM snowid_counter
 WHERE counter IN ('stripe_no'::regclass, 'home_no'::regclass) ORDER BY stripes;
SELECT array_agg(snowid_counter_next('stripe_no', 'k')) FROM generate_series(1, 5);
SELECT last FROM snowid_counter_key WHERE counter = 'stripe_no'::regclass;
SELECT snowid_counter_current('stripe_no', 'k');
SELECT snowid_counter_restart('stripe_no', 'k', 30);
SELECT snowid_counter_next('stripe_no', 'k'), snowid_counter_next('stripe_no', 'k');
SELECT snowid_counter_restart('stripe_no', 'k', 20);
SELECT snowid_counter_drop_key('stripe_no', 'k');
SELECT snowid_counter_next('stripe_no', 'k');
SELECT snowid_counter_create('stripe_int', 'integer', 'fast', 2147483640, 5, 2, 4) IS NOT NULL AS created;
SELECT snowid_counter_next('stripe_int', 1), snowid_counter_next('stripe_int', 1);
SELECT snowid_counter_next('stripe_int', 1);
SELECT snowid_counter_restart('stripe_int', 2, 2147483647);
SELECT snowid_counter_drop('stripe_int');
-- bigint's end: the last value, then the counter's end, named (not 22003)
SELECT snowid_counter_create('end_no', 'bigint') IS NOT NULL AS created;
SELECT snowid_counter_restart('end_no', 'k', 9223372036854775807);
SELECT snowid_counter_next('end_no', 'k');
SELECT snowid_counter_next('end_no', 'k');
SELECT snowid_counter_create('end_fast', 'bigint', 'fast', 1, 100) IS NOT NULL AS created;
SELECT snowid_counter_restart('end_fast', 'k', 9223372036854775800);
SELECT snowid_counter_next('end_fast', 'k');
SELECT snowid_counter_drop('end_no');
SELECT snowid_counter_drop('end_fast');
SELECT snowid_counter_drop('stripe_no');
SELECT snowid_counter_drop('home_no');
-- a database that subscribes to another may be one of several primaries
-- (its own warning differs between majors)
SET client_min_messages = error;
CREATE SUBSCRIPTION counter_sub CONNECTION 'dbname=nowhere' PUBLICATION p
  WITH (connect = false, enabled = false, create_slot = false, slot_name = NONE);
RESET client_min_messages;
SELECT snowid_counter_create('sub_no');
ALTER SUBSCRIPTION counter_sub SET (slot_name = NONE);
DROP SUBSCRIPTION counter_sub;
SELECT snowid_counter_drop('sub_no');
DROP TABLE invoice, issue;
DROP SEQUENCE plain_seq;
DROP ROLE counter_user, counter_reader;
