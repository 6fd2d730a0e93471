-- pooled tickets (member side)
--
-- The ranges of registry pools this server holds (pool.c), shared by every
-- database: the functions read and take this server's holdings, not rows.

CREATE FUNCTION snowid_pool_holdings(OUT pool text,
									 OUT type regtype,
									 OUT state text,
									 OUT first_value bigint,
									 OUT last_value bigint,
									 OUT next_value bigint,
									 OUT values_in_hand bigint,
									 OUT ranges integer,
									 OUT rate numeric,
									 OUT time_left interval,
									 OUT detail text,
									 OUT failures bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowid_pool_holdings'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_pool_holdings() IS
'the ranges of registry pools this server holds: the current range, the next value, the values in hand, the rate they are taken at (smoothed, half-life one minute), the time they last at it, and the registry''s answers that granted nothing usable';

-- For the registry functions of an upstream pool (a datacenter registry
-- serving its members from this server's holdings): not for users.
CREATE FUNCTION snowid_pool_take(pool text, n bigint,
								 OUT first_value bigint,
								 OUT last_value bigint,
								 OUT state text)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_pool_take_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_take(text, bigint) IS
'take up to n consecutive values of pool from this server''s holdings (state ok, wait, empty, unknown or closed); n = 0 only starts fetching ranges';

REVOKE ALL ON FUNCTION snowid_pool_take(text, bigint) FROM PUBLIC;

CREATE FUNCTION snowid_pool_skip(pool text, through bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'snowid_pool_skip_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_skip(text, bigint) IS
'never hand out a value of pool at or below through from this server''s holdings (persisted)';

REVOKE ALL ON FUNCTION snowid_pool_skip(text, bigint) FROM PUBLIC;

CREATE FUNCTION snowid_pool_untake(pool text, first_value bigint,
								   last_value bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowid_pool_untake_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_untake(text, bigint, bigint) IS
'put values first_value .. last_value of pool back into this server''s holdings if they are the last taken; false otherwise';

REVOKE ALL ON FUNCTION snowid_pool_untake(text, bigint, bigint) FROM PUBLIC;

CREATE FUNCTION snowid_pool_reach(pool text,
								  OUT next_value bigint,
								  OUT take_last bigint,
								  OUT held_last bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_pool_reach_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_pool_reach(text) IS
'where grants of pool from this server''s holdings reach: the next value one would hand out, the last one grant can reach, the last value held (NULL, NULL while none is in hand)';

REVOKE ALL ON FUNCTION snowid_pool_reach(text) FROM PUBLIC;

-- A ticket fed by a pool: its blocks come from the pool's ranges, not from
-- its sequence (which stays, for its name, privileges, DROP and pg_dump).
ALTER TABLE snowid_ticket ADD COLUMN pool text;	-- NULL: striped

GRANT SELECT (pool) ON snowid_ticket TO PUBLIC;

DROP FUNCTION snowid_ticket_create(text, integer, integer, integer, bigint, regtype);

-- Not STRICT: pool is NULL for a striped ticket.
CREATE FUNCTION snowid_ticket_create(name text,
									 shard integer DEFAULT 0,
									 shards integer DEFAULT 1,
									 block integer DEFAULT 1000,
									 start bigint DEFAULT 1,
									 type regtype DEFAULT 'bigint',
									 pool text DEFAULT NULL)
RETURNS regclass
AS 'MODULE_PATHNAME', 'snowid_ticket_create'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_ticket_create(text, integer, integer, integer, bigint, regtype, text) IS
'create ticket sequence name, issuing start + shard + k * shards on this server, or, with pool, values of ranges leased from that registry pool';

-- As before, with the pool at the end; for a pooled ticket the counts of
-- blocks and values left are the pool's business (snowid_pool_holdings()).
CREATE OR REPLACE VIEW snowid_tickets AS
SELECT t.seqrelid AS ticket,
	   t.type,
	   t.shard,
	   t.shards,
	   t.block,
	   t.start,
	   t.start OPERATOR(pg_catalog.+) t.shard AS first_value,
	   CASE WHEN t.pool IS NULL THEN
		 (t.start OPERATOR(pg_catalog.+) t.shard
			OPERATOR(pg_catalog.+) (k.last_k OPERATOR(pg_catalog.*) t.shards))::bigint
	   END AS last_value,
	   CASE WHEN t.pool IS NULL THEN
		 pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1
	   END AS blocks_total,
	   r.blocks_reserved,
	   c.cached_first,
	   c.cached_last,
	   CASE WHEN p.allowed THEN coalesce(c.cached_values, 0) END AS cached_values,
	   CASE WHEN p.allowed AND t.pool IS NULL THEN
		 k.last_k OPERATOR(pg_catalog.+) 1
		   OPERATOR(pg_catalog.-) least(k.last_k OPERATOR(pg_catalog.+) 1,
										r.blocks_reserved OPERATOR(pg_catalog.*) t.block)
		   OPERATOR(pg_catalog.+) coalesce(c.cached_values, 0)
	   END AS values_left,
	   t.pool
FROM snowid_ticket t
CROSS JOIN LATERAL (
	SELECT pg_catalog.div((CASE WHEN t.type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype
								THEN 2147483647 ELSE 9223372036854775807 END)::numeric
						  OPERATOR(pg_catalog.-) t.start OPERATOR(pg_catalog.-) t.shard,
						  t.shards) AS last_k) k
CROSS JOIN LATERAL (
	SELECT pg_catalog.has_sequence_privilege(t.seqrelid, 'SELECT, USAGE') AS allowed) p
CROSS JOIN LATERAL (
	SELECT CASE WHEN p.allowed AND t.pool IS NULL
				THEN least(coalesce(pg_catalog.pg_sequence_last_value(t.seqrelid)
									  OPERATOR(pg_catalog.+) 1, 0),
						   pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1)
		   END AS blocks_reserved) r
LEFT JOIN snowid_ticket_cache() c ON c.ticket OPERATOR(pg_catalog.=) t.seqrelid;

COMMENT ON VIEW snowid_tickets IS
'ticket sequences of this database: settings, blocks reserved, the block cached on this server, the values left for this shard, and the pool of a pooled ticket';

