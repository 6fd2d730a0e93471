/* snowid--1.1--1.2.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.2'" to load this file. \quit

-- Issue 10, items 4 and 7 (search_path, positions shown without
-- privileges): the type check of snowid_ticket and the view snowid_tickets
-- use pg_catalog's operators only, so that nothing a user creates on the
-- search_path is bound into them; the view shows the position of a ticket
-- only to users with SELECT or USAGE on its sequence.
ALTER TABLE snowid_ticket DROP CONSTRAINT snowid_ticket_type_check;
ALTER TABLE snowid_ticket ADD CONSTRAINT snowid_ticket_type_check
	CHECK (type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype OR
		   type OPERATOR(pg_catalog.=) 'bigint'::pg_catalog.regtype);

-- Integer division with div(): numeric "/" rounds its result for large
-- operands, which would put last_value one stride too high.  Every operator
-- is pg_catalog's (OPERATOR(pg_catalog.x)): pg_catalog has no
-- =(regclass, regclass), for one, and an operator that a user creates in a
-- schema on the search_path would otherwise be bound into the view when it
-- is created (by CREATE EXTENSION or an update), and run as whoever reads
-- it.  The position (blocks reserved, cached block, values left) shows only
-- to users with SELECT or USAGE on the sequence; others get NULLs.
CREATE OR REPLACE VIEW snowid_tickets AS
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

