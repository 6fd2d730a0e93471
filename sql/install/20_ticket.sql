-- Ticket sequences.  Each is a normal sequence (owned by its creator, not a
-- member of the extension, so pg_dump keeps it and its position, but
-- depending on it) that counts reserved blocks, plus a row here with its
-- settings and its served mark.

CREATE TABLE snowid_ticket (
	seqrelid regclass PRIMARY KEY,
	shard integer NOT NULL CHECK (shard >= 0 AND shard < shards),
	shards integer NOT NULL CHECK (shards >= 1),
	block integer NOT NULL CHECK (block >= 1),
	start bigint NOT NULL,
	type regtype NOT NULL
		CONSTRAINT snowid_ticket_type_check
		CHECK (type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype OR
			   type OPERATOR(pg_catalog.=) 'bigint'::pg_catalog.regtype),
	stamp bigint NOT NULL,			-- creation time in microseconds: tells a
									-- recycled OID from the ticket it replaced
	served bigint NOT NULL DEFAULT -1	-- highest block handed out (-1: none);
										-- raised in place, never lowered
);

COMMENT ON TABLE snowid_ticket IS
'settings of the ticket sequences of this database (written by snowid_ticket_create, removed on DROP)';

-- pg_dump dumps the rows, so a restored database keeps its tickets.
SELECT pg_catalog.pg_extension_config_dump('snowid_ticket', '');

-- Everyone may read the settings; only snowid_ticket_create writes them.
-- The served mark tells how far a ticket has got, which, as with the
-- sequence's last_value, only privileged roles may see: the owner of the
-- database among them, whose pg_dump copies the whole table.
REVOKE ALL ON snowid_ticket FROM PUBLIC;
GRANT SELECT (seqrelid, shard, shards, block, start, type, stamp)
	ON snowid_ticket TO PUBLIC;
GRANT SELECT ON snowid_ticket TO pg_database_owner;

-- A row's sequence depends on the extension: DROP EXTENSION lists the ticket
-- sequences (CASCADE drops them), and a sequence that merely got the OID of
-- a dropped ticket is never taken for one.  Fires for rows written by
-- snowid_ticket_create, by pg_restore and by the upgrade script, ALWAYS
-- (also under session_replication_role = replica).  The rows never get a
-- new version: the served mark is raised in place, and an UPDATE or DELETE
-- by hand of a live ticket's row would keep it waiting or lose it, so
-- snowid_ticket_fixed refuses both; the UPDATE that changes nothing
-- (SET seqrelid = seqrelid, after pg_upgrade) records the dependency and
-- leaves the row as it is.
CREATE FUNCTION snowid_ticket_registered()
RETURNS trigger
AS 'MODULE_PATHNAME', 'snowid_ticket_registered'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_ticket_registered() IS
'trigger on snowid_ticket: makes a ticket sequence depend on the extension, refuses changes to a ticket''s row and its deletion while the ticket exists';

REVOKE ALL ON FUNCTION snowid_ticket_registered() FROM PUBLIC;

CREATE TRIGGER snowid_ticket_registered
AFTER INSERT ON snowid_ticket
FOR EACH ROW EXECUTE FUNCTION snowid_ticket_registered();

ALTER TABLE snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_registered;

CREATE TRIGGER snowid_ticket_fixed
BEFORE UPDATE OR DELETE ON snowid_ticket
FOR EACH ROW EXECUTE FUNCTION snowid_ticket_registered();

ALTER TABLE snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_fixed;

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

-- The same, the ticket named by text and looked up in the caller's
-- search_path when a value is taken (as nextval('name'::text)): a default
-- written snowid_ticket_next('name') resolves here (an unknown literal
-- prefers text) and depends on no sequence, so that Citus, which rewrites
-- a default that depends on a sequence into nextval() on its workers,
-- copies it to every node as it is.
CREATE FUNCTION snowid_ticket_next(ticket text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_ticket_next_named'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_ticket_next(text) IS
'next value of the ticket sequence of that name in the search_path, for this server''s shard (needs USAGE or UPDATE on it); a default written with it depends on no sequence';

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
-- operands, which would put last_value one stride too high.  Every operator
-- is pg_catalog's (OPERATOR(pg_catalog.x)): pg_catalog has no
-- =(regclass, regclass), for one, and an operator that a user creates in a
-- schema on the search_path would otherwise be bound into the view when it
-- is created (by CREATE EXTENSION or an update), and run as whoever reads
-- it.  The position (blocks reserved, cached block, values left) shows only
-- to users with SELECT or USAGE on the sequence; others get NULLs.
CREATE VIEW snowid_tickets AS
SELECT t.seqrelid AS ticket,
	   t.type,
	   t.shard,
	   t.shards,
	   t.block,
	   t.start,
	   t.start OPERATOR(pg_catalog.+) t.shard AS first_value,
	   (t.start OPERATOR(pg_catalog.+) t.shard
		  OPERATOR(pg_catalog.+) (k.last_k OPERATOR(pg_catalog.*) t.shards))::bigint
		 AS last_value,
	   pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1 AS blocks_total,
	   r.blocks_reserved,
	   c.cached_first,
	   c.cached_last,
	   CASE WHEN p.allowed THEN coalesce(c.cached_values, 0) END AS cached_values,
	   CASE WHEN p.allowed THEN
		 k.last_k OPERATOR(pg_catalog.+) 1
		   OPERATOR(pg_catalog.-) least(k.last_k OPERATOR(pg_catalog.+) 1,
										r.blocks_reserved OPERATOR(pg_catalog.*) t.block)
		   OPERATOR(pg_catalog.+) coalesce(c.cached_values, 0)
	   END AS values_left
FROM snowid_ticket t
CROSS JOIN LATERAL (
	SELECT pg_catalog.div((CASE WHEN t.type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype
								THEN 2147483647 ELSE 9223372036854775807 END)::numeric
						  OPERATOR(pg_catalog.-) t.start OPERATOR(pg_catalog.-) t.shard,
						  t.shards) AS last_k) k
CROSS JOIN LATERAL (
	SELECT pg_catalog.has_sequence_privilege(t.seqrelid, 'SELECT, USAGE') AS allowed) p
CROSS JOIN LATERAL (
	SELECT CASE WHEN p.allowed
				THEN least(coalesce(pg_catalog.pg_sequence_last_value(t.seqrelid)
									  OPERATOR(pg_catalog.+) 1, 0),
						   pg_catalog.div(k.last_k, t.block) OPERATOR(pg_catalog.+) 1)
		   END AS blocks_reserved) r
LEFT JOIN snowid_ticket_cache() c ON c.ticket OPERATOR(pg_catalog.=) t.seqrelid;

COMMENT ON VIEW snowid_tickets IS
'ticket sequences of this database: settings, blocks reserved, the block cached on this server and the values left for this shard';

GRANT SELECT ON snowid_tickets TO PUBLIC;

-- DROP of a ticket sequence (directly or through DROP SCHEMA, DROP OWNED,
-- ...) removes its row: with snowid preloaded, its object-access hook does
-- that first, in every mode; the event trigger snowid_dropped
-- (55_counter.sql, for counters too) covers servers that load snowid only
-- on demand.

