/* snowid--1.10--1.11.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.11'" to load this file. \quit

-- 1.11.  Each change has a section of its own below; a function it
-- changes is replaced whole there, nothing else moves.

-- ---- i38 replication guard: TRUNCATE refused, trigger modes kept ----
-- A replicated TRUNCATE of snowid's tables is refused (row triggers never
-- saw it), and ALTER TABLE ... ENABLE TRIGGER on any of them sets the guard
-- triggers back to their modes (the library's ProcessUtility hook, from
-- 1.11 for every table of snowid, not snowid_ticket alone); the update
-- sets snowid_local_only back to REPLICA where an ENABLE TRIGGER ALL left
-- it ORIGIN.

COMMENT ON FUNCTION snowid_local_only() IS
'trigger on snowid''s tables: skips, with a WARNING, a row change that arrives by logical replication, and refuses such a TRUNCATE (these tables hold the state of their own server)';

-- TRUNCATE (1.11), which a FOR ALL TABLES publication carries too: row
-- triggers do not fire for it, and a statement trigger cannot skip it.  On
-- every table of snowid, present and future (the tables of the extension,
-- not a list), a BEFORE TRUNCATE trigger refuses one that arrives by
-- replication (a logical replication worker, or a session replaying for a
-- replication origin) with an ERROR: the subscription stops there until
-- the DBA skips that transaction, which loses nothing of this server's
-- state.  Enabled ALWAYS, so that it fires in every session, whatever its
-- session_replication_role; a TRUNCATE of this server's own passes.
DO $guard$
DECLARE
	t regclass;
BEGIN
	FOR t IN
		SELECT c.oid::pg_catalog.regclass
		  FROM pg_catalog.pg_depend d
		  JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) d.refobjid
		  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
		 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		   AND d.deptype OPERATOR(pg_catalog.=) 'e'
		   AND x.extname OPERATOR(pg_catalog.=) 'snowid'
		   AND c.relkind OPERATOR(pg_catalog.=) 'r'
		 ORDER BY c.relname
	LOOP
		EXECUTE pg_catalog.format(
			'CREATE TRIGGER snowid_local_only_truncate BEFORE TRUNCATE ON %s '
			'FOR EACH STATEMENT EXECUTE FUNCTION %I.snowid_local_only()',
			t, '@extschema@');
		EXECUTE pg_catalog.format(
			'ALTER TABLE %s ENABLE ALWAYS TRIGGER snowid_local_only_truncate', t);
		EXECUTE pg_catalog.format(
			'COMMENT ON TRIGGER snowid_local_only_truncate ON %s IS %L', t,
			'refuses a TRUNCATE of this table that arrives by logical replication (snowid_local_only)');
		-- an ENABLE TRIGGER ALL under 1.9 or 1.10 left it ORIGIN here
		IF EXISTS (SELECT FROM pg_catalog.pg_trigger g
					WHERE g.tgrelid OPERATOR(pg_catalog.=) t
					  AND g.tgname OPERATOR(pg_catalog.=) 'snowid_local_only'
					  AND g.tgenabled OPERATOR(pg_catalog.=) 'O') THEN
			EXECUTE pg_catalog.format(
				'ALTER TABLE %s ENABLE REPLICA TRIGGER snowid_local_only', t);
		END IF;
	END LOOP;
END
$guard$;
