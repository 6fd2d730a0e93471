--
-- snowid_id_above(id, node): where a node's stream continues above an ID of
-- any layout, as a start under a changed layout does (default layout:
-- 41/10/12 bits).
--
\set VERBOSITY terse

-- Within a tick, on the same node: the next sequence.
SELECT snowid_id_above((1000::bigint << 22) | (1 << 12) | 5, 1)
     = ((1000::bigint << 22) | (1 << 12) | 6) AS next_sequence;
-- The last sequence of a tick: the next tick.
SELECT snowid_id_above((1000::bigint << 22) | (1 << 12) | 4095, 1)
     = ((1001::bigint << 22) | (1 << 12)) AS next_tick;
-- An ID of a higher node: this node's IDs of that tick are all below.
SELECT snowid_id_above((1000::bigint << 22) | (5 << 12) | 7, 1)
     = ((1001::bigint << 22) | (1 << 12)) AS lower_node;
-- An ID of a lower node: this node goes on in the same tick.
SELECT snowid_id_above((1000::bigint << 22) | (5 << 12) | 7, 7)
     = ((1000::bigint << 22) | (7 << 12)) AS higher_node;

-- The bottom of the range.
SELECT snowid_id_above(0, 0) AS above_0_node_0,
       snowid_id_above(0, 1) AS above_0_node_1,
       snowid_id_above(4095, 0) AS above_4095_node_0,
       snowid_id_above(4095, 1) AS above_4095_node_1;

-- The top: no ID above the largest bigint, nor above a node's last ID.
SELECT snowid_id_above(9223372036854775807, 0) IS NULL AS none_above_max,
       snowid_id_above(9223372036854775806, 1023) AS last_of_node_1023,
       snowid_id_above(((2^41 - 1)::bigint << 22) | (1 << 12) | 4095, 1) IS NULL AS none_for_node_1,
       snowid_id_above(((2^41 - 1)::bigint << 22) | (1 << 12) | 4095, 2)
         = (((2^41 - 1)::bigint << 22) | (2 << 12)) AS node_2_in_last_tick;

-- Any bigint, any node: the result is an ID of that node, above id, and
-- the one before it in the node's stream is not.
SELECT count(*) AS cases,
       count(*) FILTER (WHERE r IS NULL) AS none,
       count(*) FILTER (WHERE r > id AND snowid_node(r) = n
                          AND CASE WHEN snowid_sequence(r) > 0 THEN r - 1
                                   WHEN r >> 22 = 0 THEN -1
                                   ELSE (((r >> 22) - 1) << 22) | (n::bigint << 12) | 4095
                              END <= id) AS minimal
FROM (SELECT id, n, snowid_id_above(id, n) AS r
      FROM (SELECT (g::bigint * 92233720368547) + (g * 7919 % 4096) AS id,
                   (g * 131) % 1024 AS n
            FROM generate_series(0, 100000) g) s) t;

-- Not an ID, not a node.
SELECT snowid_id_above(-1, 0);
SELECT snowid_id_above(0, 1024);
SELECT snowid_id_above(0, -1);
SELECT snowid_id_above(NULL, 1) IS NULL AS strict;
