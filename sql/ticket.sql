--
-- Ticket sequences: value arithmetic, shards, the integer boundary, the
-- snowid_tickets view and DROP.
--

-- Shard s of n issues start + s + k * n; blocks do not change that.
SELECT snowid_ticket_create('tk_a');
SELECT array_agg(snowid_ticket_next('tk_a')) FROM generate_series(1, 5);
SELECT snowid_ticket_create('tk_b', 2, 3, 4, 100);
SELECT array_agg(snowid_ticket_next('tk_b')) FROM generate_series(1, 10);
SELECT snowid_ticket_create('tk_c', 0, 5, 1, -10, 'integer');
SELECT array_agg(snowid_ticket_next('tk_c')) FROM generate_series(1, 6);
SELECT snowid_ticket_create('tk_d', 6, 7, 3, 0, 'bigint');
SELECT array_agg(snowid_ticket_next('tk_d')) FROM generate_series(1, 7);

-- Schema-qualified names that need quoting.
CREATE SCHEMA "Tick Schema";
SELECT snowid_ticket_create('"Tick Schema"."Orders Id"', 1, 2, 10);
SELECT snowid_ticket_next('"Tick Schema"."Orders Id"');
SELECT snowid_ticket_next('"Tick Schema"."Orders Id"');

-- snowid_ticket_shard: the shard of every value, from the value alone.
SELECT snowid_ticket_shard('tk_b', v) AS shard, count(*)
FROM generate_series(100, 129) AS v GROUP BY 1 ORDER BY 1;
SELECT count(*) FILTER (WHERE snowid_ticket_shard('tk_d', v) <> 6) AS wrong
FROM (SELECT snowid_ticket_next('tk_d') AS v FROM generate_series(1, 100)) s;
SELECT snowid_ticket_shard('tk_c', -10), snowid_ticket_shard('tk_c', -6),
       snowid_ticket_shard('tk_c', 2147483647);
-- Values no shard issues.
SELECT snowid_ticket_shard('tk_b', 99);
SELECT snowid_ticket_shard('tk_c', 2147483648);

-- In a table: the default on every shard.
CREATE TABLE orders (id integer PRIMARY KEY DEFAULT snowid_ticket_next('tk_c'), note text);
INSERT INTO orders (note) SELECT 'n' || g FROM generate_series(1, 20) g;
SELECT count(*), count(DISTINCT id), min(id), max(id),
       bool_and(snowid_ticket_shard('tk_c', id) = 0) AS all_shard_0
FROM orders;

-- A rollback never gives a value back.
BEGIN;
SELECT snowid_ticket_next('tk_a');
ROLLBACK;
SELECT snowid_ticket_next('tk_a');

-- The integer boundary: shard 1 of 3 from near the top.  Values
-- 2147483637 + 1 + 3k up to 2147483647; the last block is cut there.
SELECT snowid_ticket_create('tk_top', 1, 3, 2, 2147483637, 'integer');
SELECT last_value, blocks_total, values_left FROM snowid_tickets WHERE ticket = 'tk_top'::regclass;
SELECT snowid_ticket_next('tk_top');
SELECT snowid_ticket_next('tk_top');
SELECT snowid_ticket_next('tk_top');
SELECT snowid_ticket_next('tk_top');
SELECT last_value, blocks_reserved, values_left FROM snowid_tickets WHERE ticket = 'tk_top'::regclass;
\set VERBOSITY default
SELECT snowid_ticket_next('tk_top');
\set VERBOSITY terse
-- Still out of values (and still 2200H), never a wrap.
DO $$
BEGIN
  PERFORM snowid_ticket_next('tk_top');
EXCEPTION WHEN sequence_generator_limit_exceeded THEN
  RAISE NOTICE 'out of values: %', SQLSTATE;
END
$$;
\set VERBOSITY default
-- bigint: the top of the type.
SELECT snowid_ticket_create('tk_big', 0, 2, 1000, 9223372036854775800);
SELECT array_agg(snowid_ticket_next('tk_big')) FROM generate_series(1, 4);
SELECT snowid_ticket_next('tk_big');
SELECT values_left FROM snowid_tickets WHERE ticket = 'tk_big'::regclass;

-- The view.
SELECT ticket, type, shard, shards, block, start, first_value, last_value,
       blocks_total, blocks_reserved, cached_first, cached_last, cached_values
FROM snowid_tickets WHERE ticket IN ('tk_a'::regclass, 'tk_b'::regclass)
ORDER BY ticket::text;

-- DROP leaves no row and no slot behind.
DROP SEQUENCE tk_a;
DROP SCHEMA "Tick Schema" CASCADE;
SELECT seqrelid FROM snowid_ticket ORDER BY seqrelid::text;
SELECT ticket FROM snowid_ticket_cache() ORDER BY ticket::text;
-- A new ticket under an old name starts afresh.
SELECT snowid_ticket_create('tk_a', 0, 1, 10, 500);
SELECT snowid_ticket_next('tk_a');

DROP TABLE orders;
DROP SEQUENCE tk_a, tk_b, tk_c, tk_d, tk_top, tk_big;
SELECT count(*) AS rows_left FROM snowid_ticket;
SELECT count(*) AS slots_left FROM snowid_ticket_cache();
