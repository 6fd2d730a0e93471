--
-- Partitioning by the time inside the ID: snowid_interval, and the native
-- recipe (PARTITION BY RANGE (id), monthly bounds from
-- snowid_from_timestamp).  Default layout: 41/10/12 bits, 1 ms ticks.
--
\set VERBOSITY terse
SET TimeZone = 'America/New_York';

-- The span of an interval: its ticks, shifted past the node and sequence.
SELECT snowid_interval('1 ms') AS one_tick,
       snowid_interval('1 day') AS one_day,
       snowid_interval('1 day') = 86400000::bigint << 22 AS day_is_ticks_shifted,
       snowid_interval('0') AS zero,
       snowid_interval('1 day -1 hour') = snowid_interval('23 hours') AS mixed_signs;
-- It is the distance of snowid_from_timestamp between two times.
SELECT snowid_from_timestamp(t + interval '36 hours 15 ms') - snowid_from_timestamp(t)
       = snowid_interval('36 hours 15 ms') AS distance
  FROM (VALUES (timestamptz '2026-03-07 12:00:00+00')) v(t);
-- A day is 24 hours, whatever the time zone does that day.
SELECT snowid_interval('1 day') = snowid_interval('24 hours') AS day_is_24h;
-- The longest span the layout expresses (2^41 - 1 ms lies in day 25452).
SELECT snowid_interval('25451 days') AS longest_days;

-- Refused: months, negative, not a whole tick, beyond the layout.
SELECT snowid_interval('1 month');
SELECT snowid_interval('1 year 1 day');
SELECT snowid_interval('-1 hour');
SELECT snowid_interval('1 day -25 hours');
SELECT snowid_interval('1.5 ms');
SELECT snowid_interval('1 us');
SELECT snowid_interval('25452 days');
SELECT snowid_interval('2147483647 days');
SELECT snowid_interval(NULL) IS NULL AS strict;
SELECT provolatile, proparallel, proisstrict FROM pg_proc
 WHERE oid = 'snowid_interval(interval)'::regprocedure;

-- The native recipe: monthly partitions of UTC months, from three months
-- back to three ahead, bounds computed once with snowid_from_timestamp.
CREATE TABLE orders (
    id   bigint PRIMARY KEY DEFAULT snowid_next(),
    item text
) PARTITION BY RANGE (id);

DO $$
DECLARE
    m timestamp;  -- the first of a month, UTC
BEGIN
    FOR m IN SELECT generate_series(
                 date_trunc('month', now() AT TIME ZONE 'UTC') - interval '3 months',
                 date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
                 interval '1 month')
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF orders FOR VALUES FROM (%s) TO (%s)',
                       'orders_' || to_char(m, 'YYYY_MM'),
                       snowid_from_timestamp(m AT TIME ZONE 'UTC'),
                       snowid_from_timestamp((m + interval '1 month') AT TIME ZONE 'UTC'));
    END LOOP;
END
$$;

-- Rows of now (the default), of other months, and on both sides of a
-- month's first bound.
INSERT INTO orders (item) SELECT 'now ' || i FROM generate_series(1, 5) i;
INSERT INTO orders (id, item)
SELECT snowid_from_timestamp(now() + d * interval '1 day') + 7, 'day ' || d
  FROM generate_series(-85, 85, 17) d;
INSERT INTO orders (id, item)
SELECT snowid_from_timestamp(date_trunc('month', now(), 'UTC')) + o, 'edge ' || o
  FROM (VALUES (-1), (0)) v(o);

-- Every row lies in the partition of its month: its time is within the
-- partition's bounds read back as times, and the partition is named for it.
CREATE TEMP VIEW placed AS
SELECT o.id, o.tableoid::regclass::text AS part, b[1]::bigint AS lo, b[2]::bigint AS hi
  FROM orders o
  JOIN pg_class c ON c.oid = o.tableoid,
       regexp_matches(pg_get_expr(c.relpartbound, c.oid), '(\d+).*?(\d+)') b;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE snowid_timestamp(id) >= snowid_timestamp(lo)
                          AND snowid_timestamp(id) < snowid_timestamp(hi)
                          AND part = 'orders_' || to_char(snowid_timestamp(id) AT TIME ZONE 'UTC', 'YYYY_MM'))
           AS in_their_month
  FROM placed;
-- The edge: the last ID before the first of the month lies in the month
-- before, the first bound itself in the month.
SELECT item, part = 'orders_' || to_char(date_trunc('month', now() AT TIME ZONE 'UTC')
                                          - CASE WHEN item = 'edge -1' THEN interval '1 month'
                                                 ELSE interval '0' END, 'YYYY_MM') AS right_month
  FROM placed JOIN orders USING (id) WHERE item LIKE 'edge%' ORDER BY item;

-- A time range on the ID prunes the partitions of other months.
CREATE FUNCTION pg_temp.partitions_scanned(query text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON, ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query INTO plan;
    RETURN json_array_length(plan -> 0 -> 'Plan' -> 'Plans');
END
$$;
SELECT pg_temp.partitions_scanned(
    $q$SELECT * FROM orders
        WHERE id >= snowid_from_timestamp(date_trunc('month', now(), 'UTC'))$q$)
    AS partitions_scanned;

-- A row beyond the last partition has nowhere to go: make partitions ahead.
INSERT INTO orders (id, item)
VALUES (snowid_from_timestamp(now() + interval '200 days'), 'too far');

DROP VIEW placed;
DROP TABLE orders;
