--
-- Layout arithmetic and decode round trips (default layout: 41/10/12 bits,
-- 1 ms ticks from 2025-01-01 00:00:00+00).
--
SET timezone = 'UTC';

SELECT epoch, tick, timestamp_bits, node_bits, sequence_bits, id_bits,
       ids_per_second, last_timestamp, node_id IS NOT NULL AS node_set
FROM snowid_layout();

-- The first ID the layout can express: tick 0, node 0, sequence 0.
SELECT * FROM snowid_decode(0);

-- The last one: every bit but the sign set.
SELECT * FROM snowid_decode(9223372036854775807);
SELECT snowid_timestamp(9223372036854775807) = last_timestamp AS last_ok
FROM snowid_layout();

-- Extremes of node and sequence, in the first and the last tick.
SELECT snowid_node(1023::bigint << 12) AS max_node,
       snowid_sequence(1023::bigint << 12) AS seq0,
       snowid_node(4095) AS node0,
       snowid_sequence(4095) AS max_seq,
       snowid_node(((2^41 - 1)::bigint << 22) | 4095) AS node_last_tick,
       snowid_sequence(((2^41 - 1)::bigint << 22) | (1023 << 12)) AS seq_last_tick;

-- Compose by hand, decode, compare.
SELECT v.tick, v.n, v.seq,
       d.ts = '2025-01-01 00:00:00+00'::timestamptz + v.tick * interval '1 ms' AS ts_ok,
       d.node = v.n AS node_ok,
       d.sequence = v.seq AS seq_ok
FROM (VALUES (0::bigint, 0, 0), (1, 1, 1), (1000, 512, 2048),
             (86400000, 1023, 4095), (2199023255551, 7, 9)) AS v(tick, n, seq),
     LATERAL snowid_decode((v.tick << 22) | (v.n::bigint << 12) | v.seq) AS d
ORDER BY tick;

-- snowid_from_timestamp: the smallest ID of the tick containing ts.
SELECT snowid_from_timestamp('2025-01-01 00:00:00+00') AS first_tick,
       snowid_from_timestamp('2025-01-01 00:00:00.0009+00') AS still_first,
       snowid_from_timestamp('2025-01-01 00:00:00.001+00') AS second_tick,
       snowid_from_timestamp('2025-01-02 00:00:00+00') = 86400000::bigint << 22 AS one_day;
SELECT snowid_from_timestamp(last_timestamp) = (2^41 - 1)::bigint << 22 AS last_tick_ok
FROM snowid_layout();

-- ... and it agrees with snowid_timestamp for IDs across the whole range.
SELECT count(*) AS ids,
       count(*) FILTER (WHERE snowid_from_timestamp(snowid_timestamp(id)) = id & ~((1::bigint << 22) - 1)) AS round_trips,
       count(*) FILTER (WHERE snowid_from_timestamp(snowid_timestamp(id)) <= id
                          AND snowid_from_timestamp(snowid_timestamp(id) + interval '1 ms') > id) AS bracketed
FROM (SELECT (g::bigint * 9223372036854) + (g % 4096) AS id
      FROM generate_series(0, 999999, 997) AS g) AS s;
