--
-- snowid_next() and snowid_next_batch() on this server.  Output does not
-- depend on the node ID or on timing.
--

-- The statistics count since the server started: compare with them now.
CREATE TEMP TABLE stats_before AS SELECT * FROM snowid_stats();

-- IDs carry this server's node ID and a timestamp close to now.
SELECT snowid_node(id) = (SELECT node_id FROM snowid_layout()) AS node_ok,
       abs(extract(epoch FROM snowid_timestamp(id) - now())) < 60 AS ts_ok,
       id > snowid_from_timestamp(now() - interval '1 minute') AS after_minute_ago
FROM (SELECT snowid_next() AS id) AS s;

-- Strictly increasing in issue order, no duplicates, never negative.
WITH s AS (
  SELECT n, snowid_next() AS id FROM generate_series(1, 100000) AS n
)
SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE id <= prev) AS not_increasing,
       count(*) FILTER (WHERE id < 0) AS negative
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM s) AS t;

-- A batch is increasing and comes after everything issued before it.
CREATE TEMP TABLE before AS SELECT snowid_next() AS id;
CREATE TEMP TABLE batch AS
  SELECT row_number() OVER () AS n, id FROM snowid_next_batch(10000) AS id;
SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       min(id) > (SELECT id FROM before) AS after_before,
       bool_and(snowid_node(id) = (SELECT node_id FROM snowid_layout())) AS node_ok
FROM batch;
SELECT count(*) FILTER (WHERE id <= prev) AS not_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM batch) AS t;
SELECT snowid_next() > (SELECT max(id) FROM batch) AS next_after_batch;

-- As a column default.
CREATE TEMP TABLE orders (id bigint PRIMARY KEY DEFAULT snowid_next(), item text);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 1000) AS g;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       bool_and(snowid_node(id) = (SELECT node_id FROM snowid_layout())) AS node_ok
FROM orders;
-- A range scan by time uses the primary key.
EXPLAIN (COSTS OFF)
SELECT * FROM orders WHERE id >= snowid_from_timestamp(now() - interval '1 day');

-- The statistics moved (by this test, whatever the server did before it).
SELECT s.ids_issued - b.ids_issued >= 111002 AS issued_ok,
       s.ticks_borrowed >= b.ticks_borrowed AS borrowed_ok,
       s.waits >= b.waits AS waits_ok,
       s.clock_errors = b.clock_errors AS no_clock_errors,
       s.last_id >= (SELECT max(id) FROM orders) AS last_id_ok,
       s.lead_ms >= 0 AS lead_ok
FROM snowid_stats() AS s, stats_before AS b;
