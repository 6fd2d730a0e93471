/* snowid--1.0--1.1.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.1'" to load this file. \quit

-- Ticket sequences.  Each is a normal sequence (owned by its creator, not a
-- member of the extension, so pg_dump keeps it and its position) that
-- counts reserved blocks, plus a row here with its settings.

CREATE TABLE snowid_ticket (
	seqrelid regclass PRIMARY KEY,
	shard integer NOT NULL CHECK (shard >= 0 AND shard < shards),
	shards integer NOT NULL CHECK (shards >= 1),
	block integer NOT NULL CHECK (block >= 1),
	start bigint NOT NULL,
	type regtype NOT NULL CHECK (type IN ('integer'::regtype, 'bigint'::regtype)),
	stamp bigint NOT NULL			-- creation time in microseconds: tells a
									-- recycled OID from the ticket it replaced
);

COMMENT ON TABLE snowid_ticket IS
'settings of the ticket sequences of this database (written by snowid_ticket_create, removed on DROP)';

-- pg_dump dumps the rows, so a restored database keeps its tickets.
SELECT pg_catalog.pg_extension_config_dump('snowid_ticket', '');

-- Everyone may read the settings; only snowid_ticket_create writes them.
GRANT SELECT ON snowid_ticket TO PUBLIC;

CREATE FUNCTION snowid_ticket_create(name text,
									 shard integer DEFAULT 0,
									 shards integer DEFAULT 1,
									 block integer DEFAULT 1000,
									 start bigint DEFAULT 1,
									 type regtype DEFAULT 'bigint')
RETURNS regclass
AS 'MODULE_PATHNAME', 'snowid_ticket_create'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_ticket_create(text, integer, integer, integer, bigint, regtype) IS
'create ticket sequence name, issuing start + shard + k * shards on this server';

CREATE FUNCTION snowid_ticket_next(ticket regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_ticket_next'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_ticket_next(regclass) IS
'next value of a ticket sequence for this server''s shard (needs USAGE or UPDATE on it)';

-- STABLE: it reads the settings from snowid_ticket.
CREATE FUNCTION snowid_ticket_shard(ticket regclass, value bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowid_ticket_shard'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_ticket_shard(regclass, bigint) IS
'the shard of a ticket sequence that issued value';

CREATE FUNCTION snowid_ticket_cache(OUT ticket regclass,
									OUT cached_first bigint,
									OUT cached_last bigint,
									OUT cached_values bigint,
									OUT server_blocks bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowid_ticket_cache'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_ticket_cache() IS
'the blocks of ticket sequences of this database cached in this server''s shared memory';

-- Integer division with div(): numeric "/" rounds its result for large
-- operands, which would put last_value one stride too high.
CREATE VIEW snowid_tickets AS
SELECT t.seqrelid AS ticket,
	   t.type,
	   t.shard,
	   t.shards,
	   t.block,
	   t.start,
	   t.start + t.shard AS first_value,
	   (t.start + t.shard + k.last_k * t.shards)::bigint AS last_value,
	   pg_catalog.div(k.last_k, t.block) + 1 AS blocks_total,
	   r.blocks_reserved,
	   c.cached_first,
	   c.cached_last,
	   coalesce(c.cached_values, 0) AS cached_values,
	   k.last_k + 1 - least((k.last_k + 1), r.blocks_reserved * t.block)
		 + coalesce(c.cached_values, 0) AS values_left
FROM snowid_ticket t
CROSS JOIN LATERAL (
	SELECT pg_catalog.div((CASE WHEN t.type = 'integer'::regtype THEN 2147483647
							 ELSE 9223372036854775807 END)::numeric
						  - t.start - t.shard, t.shards) AS last_k) k
CROSS JOIN LATERAL (
	SELECT CASE WHEN pg_catalog.has_sequence_privilege(t.seqrelid, 'SELECT, USAGE')
				THEN least(coalesce(pg_catalog.pg_sequence_last_value(t.seqrelid) + 1, 0),
						   pg_catalog.div(k.last_k, t.block) + 1)
		   END AS blocks_reserved) r
LEFT JOIN snowid_ticket_cache() c ON c.ticket = t.seqrelid;

COMMENT ON VIEW snowid_tickets IS
'ticket sequences of this database: settings, blocks reserved, the block cached on this server and the values left for this shard';

GRANT SELECT ON snowid_tickets TO PUBLIC;

-- DROP of a ticket sequence (directly or through DROP SCHEMA, DROP OWNED,
-- ...) removes its row.  SECURITY DEFINER because the dropping user need not
-- be allowed to write snowid_ticket; the search_path is fixed.
CREATE FUNCTION snowid_ticket_dropped()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM @extschema@.snowid_ticket t
	USING pg_catalog.pg_event_trigger_dropped_objects() d
	WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
	  AND d.objsubid = 0
	  AND t.seqrelid::pg_catalog.oid = d.objid;
END
$$;

REVOKE ALL ON FUNCTION snowid_ticket_dropped() FROM PUBLIC;

CREATE EVENT TRIGGER snowid_ticket_dropped ON sql_drop
EXECUTE FUNCTION snowid_ticket_dropped();
