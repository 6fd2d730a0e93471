-- An Instagram-style ID generator in PL/pgSQL, written from the published
-- algorithm: 41 bits of milliseconds since a custom epoch, 13 bits of shard
-- ID, 10 bits of nextval() % 1024.  It is here only as a benchmark
-- candidate: past 1,024 IDs in one millisecond it wraps and repeats IDs.
CREATE SEQUENCE IF NOT EXISTS bench_instagram_seq;

CREATE OR REPLACE FUNCTION bench_instagram_id(shard integer DEFAULT 1)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    epoch_ms constant bigint := 1735689600000;	-- 2025-01-01 UTC
    now_ms bigint;
    seq bigint;
BEGIN
    SELECT nextval('bench_instagram_seq') % 1024 INTO seq;
    now_ms := floor(extract(epoch FROM clock_timestamp()) * 1000);
    RETURN ((now_ms - epoch_ms) << 23) | (shard::bigint << 10) | seq;
END
$$;
