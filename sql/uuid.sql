--
-- Snowids as version 7 UUIDs: snowid_to_uuid, snowid_from_uuid and
-- snowid_next_uuid under the default layout (41/10/12 bits, 1 ms ticks from
-- 2025-01-01 00:00:00+00 = 1735689600000 ms = 0x01941f297c00 after 1970).
-- Other layouts: test/t/019_uuid_layouts.pl.
--
SET timezone = 'UTC';

-- Known values, worked out by hand: 48 bits of Unix milliseconds, the
-- version 7, eleven zero bits, bit 62 of the ID, the variant 10, bits 61..0
-- of the ID.
--   0: tick 0 -> 01941f29-7c00-7000-8000-000000000000
--   (123456 << 22) | (5 << 12) | 7 = 517812015111 = 0x7890005007: tick
--      123456 -> 0x01941f2b5e40, then 8000 0078 9000 5007
--   2^62 = tick 2^40 -> 0x01941f297c00 + 0x10000000000 = 0x02941f297c00,
--      bit 62 set -> 7001, low bits 0 -> 8000-000000000000
--   2^63-1: tick 2^41-1 -> 0x03941f297bff, 7001-bfff-ffffffffffff
SELECT v.id, snowid_to_uuid(v.id) AS uuid,
       snowid_to_uuid(v.id) = v.expected AS known_ok,
       snowid_from_uuid(v.expected) = v.id AS back_ok
  FROM (VALUES (0::bigint, '01941f29-7c00-7000-8000-000000000000'::uuid),
               (517812015111, '01941f2b-5e40-7000-8000-007890005007'),
               (4611686018427387904, '02941f29-7c00-7001-8000-000000000000'),
               (9223372036854775807, '03941f29-7bff-7001-bfff-ffffffffffff'))
       AS v(id, expected)
 ORDER BY v.id;

-- Round trip and version/variant over random IDs of the whole range, and
-- the boundaries: 0, 1, the last sequence and node of tick 0, the first and
-- last ID of the last tick, 2^62 - 1 and 2^62 (bit 62 moves into rand_a).
SELECT setseed(0.25);
CREATE TEMP TABLE ids AS
SELECT ((random() * 2147483647)::bigint << 32) | (random() * 4294967295)::bigint AS id
  FROM generate_series(1, 20000)
UNION ALL
SELECT unnest(ARRAY[0, 1, 4095, 4194303, 4194304,
                    9223372036850581504, 9223372036854775806, 9223372036854775807,
                    4611686018427387903, 4611686018427387904]::bigint[]);
SELECT count(*) AS ids,
       count(*) FILTER (WHERE snowid_from_uuid(snowid_to_uuid(id)) = id) AS round_trips,
       count(*) FILTER (WHERE substr(snowid_to_uuid(id)::text, 15, 1) = '7') AS version_7,
       count(*) FILTER (WHERE substr(snowid_to_uuid(id)::text, 20, 1) IN ('8', '9', 'a', 'b')) AS variant_10,
       count(*) FILTER (WHERE substr(snowid_to_uuid(id)::text, 16, 3) IN ('000', '001')) AS zero_bits
  FROM ids;

-- The time field is the ID's time in Unix milliseconds.
SELECT count(*) FILTER (WHERE ('x' || lpad(replace(substr(snowid_to_uuid(id)::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
                              = extract(epoch FROM snowid_timestamp(id)) * 1000) AS time_ok
  FROM ids;

-- UUID order is ID order: rank each ID by both and compare.
SELECT count(*) AS ids,
       count(*) FILTER (WHERE by_id = by_uuid) AS same_rank
  FROM (SELECT row_number() OVER (ORDER BY id) AS by_id,
               row_number() OVER (ORDER BY snowid_to_uuid(id)) AS by_uuid
          FROM (SELECT DISTINCT id FROM ids) AS d) AS r;
-- ... also for neighbours in one tick and across ticks and nodes.
SELECT bool_and(snowid_to_uuid(a) < snowid_to_uuid(b)) AS neighbours_ordered
  FROM (VALUES (0::bigint, 1::bigint), (4095, 4096), (4194303, 4194304),
               (4611686018427387903, 4611686018427387904),
               (9223372036854775806, 9223372036854775807)) AS v(a, b);

-- The server's own functions read the UUID as version 7 (17 and later) with
-- the ID's time (18 and later: 17's uuid_extract_timestamp reads only
-- version 1 and returns NULL for version 7; on 15 and 16 neither exists).
-- The same output on every version.
DO $$
DECLARE
	checked bigint;
	bad bigint;
BEGIN
	IF current_setting('server_version_num')::int >= 170000 THEN
		EXECUTE $q$
			SELECT count(*), count(*) FILTER (WHERE uuid_extract_version(snowid_to_uuid(id)) IS DISTINCT FROM 7)
			  FROM ids$q$ INTO checked, bad;
		IF checked < 20000 OR bad <> 0 THEN
			RAISE EXCEPTION '% of % UUIDs where uuid_extract_version is not 7', bad, checked;
		END IF;
	END IF;
	IF current_setting('server_version_num')::int >= 180000 THEN
		EXECUTE $q$
			SELECT count(*),
			       count(*) FILTER (WHERE uuid_extract_timestamp(snowid_to_uuid(id))
			                              IS DISTINCT FROM date_trunc('milliseconds', snowid_timestamp(id)))
			  FROM ids$q$ INTO checked, bad;
		IF checked < 20000 OR bad <> 0 THEN
			RAISE EXCEPTION '% of % UUIDs where uuid_extract_timestamp is not snowid_timestamp', bad, checked;
		END IF;
	END IF;
	RAISE NOTICE 'uuid_extract_version and uuid_extract_timestamp agree';
END
$$;

-- Labels: converting reads the layout (STABLE, as the decoders);
-- snowid_next_uuid is VOLATILE and PARALLEL RESTRICTED, as snowid_next.
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p
 WHERE p.proname IN ('snowid_to_uuid', 'snowid_from_uuid', 'snowid_next_uuid',
                     'snowid_timestamp', 'snowid_next')
 ORDER BY p.proname;

-- Refusals, each 22023 with what is wrong.
\set VERBOSITY default
-- a negative bigint is no snowid
SELECT snowid_to_uuid(-1);
-- version 4 (gen_random_uuid's), version 1
SELECT snowid_from_uuid('01941f29-7c00-4000-8000-000000000000');
SELECT snowid_from_uuid('01941f29-7c00-1000-8000-000000000000');
-- variant 11 (Microsoft's) and 0 (NCS)
SELECT snowid_from_uuid('01941f29-7c00-7000-c000-000000000000');
SELECT snowid_from_uuid('01941f29-7c00-7000-0000-000000000000');
-- bits 52 .. 62 not zero, as in a uuidv7() value
SELECT snowid_from_uuid('01941f29-7c00-7800-8000-000000000000');
SELECT snowid_from_uuid('01941f29-7c00-7002-8000-000000000000');
-- a time field that is not the ID's time: a millisecond later, before the
-- epoch, the Unix epoch itself
SELECT snowid_from_uuid('01941f29-7c01-7000-8000-000000000000');
SELECT snowid_from_uuid('01941f29-7bff-7000-8000-000000000000');
SELECT snowid_from_uuid('00000000-0000-7000-8000-000000000000');
\set VERBOSITY terse
-- the nil and max UUIDs, and a uuidv7()-like value with random bits
SELECT snowid_from_uuid('00000000-0000-0000-0000-000000000000');
SELECT snowid_from_uuid('ffffffff-ffff-ffff-ffff-ffffffffffff');
SELECT snowid_from_uuid('01941f29-7c00-7abc-9def-0123456789ab');
-- NULL in, NULL out
SELECT snowid_to_uuid(NULL) IS NULL AS to_null, snowid_from_uuid(NULL) IS NULL AS from_null;

-- snowid_next_uuid: the next ID of this server, as a UUID, in the one stream
-- snowid_next() takes from.
SELECT snowid_node(snowid_from_uuid(snowid_next_uuid())) AS node;
SELECT snowid_from_uuid(u) < n AND n < snowid_from_uuid(u2) AS one_stream
  FROM (SELECT snowid_next_uuid() AS u) a,
       LATERAL (SELECT snowid_next() AS n) b,
       LATERAL (SELECT snowid_next_uuid() AS u2 WHERE n IS NOT NULL) c;
SELECT abs(extract(epoch FROM snowid_timestamp(snowid_from_uuid(snowid_next_uuid())) - clock_timestamp())) < 5 AS near_now;

-- A uuid column defaulting to snowid_next_uuid(): distinct, of this node,
-- and in insert order.
CREATE TABLE uuid_rows (n serial, id uuid PRIMARY KEY DEFAULT snowid_next_uuid(), note text);
INSERT INTO uuid_rows (note) SELECT 'row ' || g FROM generate_series(1, 3000) AS g;
INSERT INTO uuid_rows (note) VALUES ('one more') RETURNING n, snowid_node(snowid_from_uuid(id)) AS node;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE snowid_node(snowid_from_uuid(id)) = 1) AS node_1,
       count(*) FILTER (WHERE snowid_to_uuid(snowid_from_uuid(id)) = id) AS round_trips
  FROM uuid_rows;
SELECT count(*) FILTER (WHERE by_n <> by_id) AS out_of_order
  FROM (SELECT row_number() OVER (ORDER BY n) AS by_n,
               row_number() OVER (ORDER BY id) AS by_id FROM uuid_rows) AS r;
-- A range of UUIDs given by converted bounds holds the rows of that time.
SELECT count(*) = 3001 AS range_ok
  FROM uuid_rows
 WHERE id >= snowid_to_uuid(snowid_from_timestamp(now() - interval '1 hour'))
   AND id < snowid_to_uuid(snowid_from_timestamp(now() + interval '1 hour'));
DROP TABLE uuid_rows;
