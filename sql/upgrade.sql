--
-- Upgrades: install 1.0, update step by step to the current version, and
-- compare every member object with a fresh install of that version: its
-- definition, volatility, parallel label, strictness, settings, privileges
-- (column privileges too) and comment, and for tables their defaults,
-- constraints, triggers (and whether they fire ALWAYS), indexes and
-- policies.  Leaves a fresh install for the tests that follow.
--
DROP EXTENSION IF EXISTS snowid;
-- What an installed snowid consists of, one row per member object.
CREATE TEMP VIEW snowid_objects AS
SELECT pg_catalog.pg_describe_object(d.classid, d.objid, 0) AS object,
	   CASE d.classid
		 WHEN 'pg_catalog.pg_proc'::regclass THEN
		   (SELECT concat_ws(' | ', pg_get_function_arguments(p.oid),
							 pg_get_function_result(p.oid), p.provolatile,
							 p.proparallel, p.proisstrict, p.prosecdef,
							 p.proconfig::text, p.prorows, p.procost,
							 p.prosrc, p.probin, p.proacl::text)
			  FROM pg_proc p WHERE p.oid = d.objid)
		 WHEN 'pg_catalog.pg_class'::regclass THEN
		   (SELECT concat_ws(' | ', c.relkind, c.relacl::text,
							 c.relpersistence::text, c.relrowsecurity,
							 c.reloptions::text,
							 CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END,
							 (SELECT string_agg(a.attname || ' ' ||
												format_type(a.atttypid, a.atttypmod) ||
												CASE WHEN a.attnotnull THEN ' not null' ELSE '' END ||
												coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '') ||
												coalesce(' ' || a.attacl::text, ''),
												', ' ORDER BY a.attnum)
								FROM pg_attribute a
								LEFT JOIN pg_attrdef ad
								  ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
							   WHERE a.attrelid = c.oid AND a.attnum > 0
								 AND NOT a.attisdropped),
							 (SELECT string_agg(k.conname || ' ' || pg_get_constraintdef(k.oid), ', '
												ORDER BY k.conname)
								FROM pg_constraint k WHERE k.conrelid = c.oid),
							 -- triggers (with how they fire: ALWAYS matters),
							 -- indexes and policies are no extension members
							 -- of their own, so they are compared here
							 (SELECT string_agg(t.tgname || ' ' || t.tgenabled::text ||
												' ' || pg_get_triggerdef(t.oid), ', '
												ORDER BY t.tgname)
								FROM pg_trigger t
							   WHERE t.tgrelid = c.oid AND NOT t.tgisinternal),
							 (SELECT string_agg(pg_get_indexdef(i.indexrelid), ', '
												ORDER BY pg_get_indexdef(i.indexrelid))
								FROM pg_index i WHERE i.indrelid = c.oid),
							 (SELECT string_agg(po.polname || ' ' || po.polcmd::text ||
												' ' || po.polroles::text || ' ' ||
												coalesce(pg_get_expr(po.polqual, po.polrelid), '') ||
												' ' ||
												coalesce(pg_get_expr(po.polwithcheck, po.polrelid), ''),
												', ' ORDER BY po.polname)
								FROM pg_policy po WHERE po.polrelid = c.oid))
			  FROM pg_class c WHERE c.oid = d.objid)
		 WHEN 'pg_catalog.pg_event_trigger'::regclass THEN
		   (SELECT concat_ws(' | ', e.evtevent, e.evtfoid::regproc, e.evtenabled,
							 e.evttags::text)
			  FROM pg_event_trigger e WHERE e.oid = d.objid)
	   END AS definition,
	   obj_description(d.objid, (d.classid::regclass)::name) AS comment
  FROM pg_depend d
  JOIN pg_extension x ON x.oid = d.refobjid
 WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass
   AND d.deptype = 'e' AND x.extname = 'snowid'
   -- the row types of tables and views (and their arrays) are members from
   -- PostgreSQL 17 on (not 15); the relations themselves are compared above
   AND NOT EXISTS (SELECT FROM pg_type t
					LEFT JOIN pg_type elem ON elem.oid = t.typelem
				   WHERE d.classid = 'pg_catalog.pg_type'::regclass
					 AND t.oid = d.objid
					 AND (t.typrelid <> 0 OR elem.typrelid <> 0))
UNION ALL
SELECT 'extension configuration', x.extconfig::regclass[]::text, NULL
  FROM pg_extension x WHERE x.extname = 'snowid';
CREATE EXTENSION snowid VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
ALTER EXTENSION snowid UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- The extension at 1.1 works.
SELECT snowid_ticket_create('upgrade_t');
SELECT snowid_ticket_next('upgrade_t');
DROP SEQUENCE upgrade_t;
SELECT count(*) AS rows_left FROM snowid_ticket;
-- A ticket of 1.1 that lives on: the update gives it its served mark and
-- its dependency on the extension.
SELECT snowid_ticket_create('upgrade_keep', 0, 1, 5);
SELECT array_agg(snowid_ticket_next('upgrade_keep')) FROM generate_series(1, 7);
ALTER EXTENSION snowid UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
SELECT served, pg_sequence_last_value('upgrade_keep') AS last_block
  FROM snowid_ticket WHERE seqrelid = 'upgrade_keep'::regclass;
SELECT pg_describe_object(classid, objid, 0) AS object,
	   pg_describe_object(refclassid, refobjid, 0) AS depends_on, deptype
  FROM pg_depend
 WHERE classid = 'pg_class'::regclass AND objid = 'upgrade_keep'::regclass
   AND refclassid = 'pg_extension'::regclass;
SELECT array_agg(snowid_ticket_next('upgrade_keep')) FROM generate_series(1, 5);
SELECT setval('upgrade_keep', 0);
SELECT snowid_ticket_next('upgrade_keep') FROM generate_series(1, 5);
-- 1.3 adds the registry; the ticket of 1.1 lives on unchanged.
ALTER EXTENSION snowid UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
SELECT served FROM snowid_ticket WHERE seqrelid = 'upgrade_keep'::regclass;
-- 1.4 adds pools; the ticket of 1.1 still lives on, and so does one of 1.3.
SELECT snowid_ticket_create('upgrade_13', 0, 1, 5);
SELECT array_agg(snowid_ticket_next('upgrade_13')) FROM generate_series(1, 3);
ALTER EXTENSION snowid UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- The row of the 1.3 ticket has one column fewer than the table now: the
-- served mark of its next blocks is still raised in place.
SELECT array_agg(snowid_ticket_next('upgrade_13')) FROM generate_series(1, 12);
SELECT served, pool FROM snowid_ticket WHERE seqrelid = 'upgrade_13'::regclass;
-- 1.5: the registry trusts no caller.
ALTER EXTENSION snowid UPDATE TO '1.5';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- 1.6: snowid on Citus.
ALTER EXTENSION snowid UPDATE TO '1.6';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- 1.7: converting columns, who may generate, IDs as UUIDs.
ALTER EXTENSION snowid UPDATE TO '1.7';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- 1.8: no caller, copy or forgetful registry makes a duplicate.
ALTER EXTENSION snowid UPDATE TO '1.8';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- 1.9: a way in from pgEdge's snowflake; snowid's tables skip changes
-- that arrive by logical replication.
ALTER EXTENSION snowid UPDATE TO '1.9';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- 1.10: a transaction left open on a node's row keeps no holder out.
ALTER EXTENSION snowid UPDATE TO '1.10';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- 1.11: restores, copies and replicas never bring values back.
ALTER EXTENSION snowid UPDATE TO '1.11';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
-- 2.0: the registry's server process applies members' calls.  The
-- functions members call keep the grants they had; the <name>_serve
-- functions that do the work are no member's.
CREATE ROLE upgrade_member;
GRANT EXECUTE ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])
	TO upgrade_member;
ALTER EXTENSION snowid UPDATE TO '2.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
SELECT has_function_privilege('upgrade_member',
		'snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])',
		'EXECUTE') AS member_may_call,
	   has_function_privilege('upgrade_member',
		'snowid_pool_grant_serve(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])',
		'EXECUTE') AS member_may_apply,
	   (SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		 WHERE p.oid = 'snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])'::regprocedure) AS called,
	   (SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		 WHERE p.oid = 'snowid_pool_grant_serve(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])'::regprocedure) AS applied;
REVOKE EXECUTE ON FUNCTION snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])
	FROM upgrade_member;
DROP ROLE upgrade_member;
ALTER EXTENSION snowid UPDATE TO '2.1';
SELECT extversion FROM pg_extension WHERE extname = 'snowid';
DROP SEQUENCE upgrade_keep, upgrade_13;
SELECT extversion = (SELECT default_version FROM pg_available_extensions
					  WHERE name = 'snowid') AS at_default_version
  FROM pg_extension WHERE extname = 'snowid';
CREATE TEMP TABLE upgraded AS SELECT * FROM snowid_objects;
DROP EXTENSION snowid;
CREATE EXTENSION snowid;
CREATE TEMP TABLE fresh AS SELECT * FROM snowid_objects;
-- The objects of a fresh install, by name.
SELECT object FROM fresh ORDER BY 1;
-- Differences between the upgraded and the fresh install: none.
(SELECT 'only after upgrade' AS side, * FROM upgraded
 EXCEPT SELECT 'only after upgrade', * FROM fresh)
UNION ALL
(SELECT 'only in fresh install', * FROM fresh
 EXCEPT SELECT 'only in fresh install', * FROM upgraded)
ORDER BY 2, 1;
-- The comparison above sees what it claims to: the tables' definitions
-- hold their triggers, indexes, defaults and constraints.
SELECT object,
	   definition ~ 'CREATE TRIGGER' AS triggers,
	   definition ~ 'CREATE UNIQUE INDEX' AS indexes,
	   definition ~ ' default ' AS defaults,
	   definition ~ 'PRIMARY KEY' AS constraints
  FROM fresh WHERE object LIKE 'table %' ORDER BY 1;
DROP TABLE upgraded, fresh;
DROP VIEW snowid_objects;

-- The update to 1.6 gives snowid_ticket_next(text) the privileges of
-- snowid_ticket_next(regclass): EXECUTE revoked from PUBLIC stays revoked.
DROP EXTENSION snowid;
CREATE EXTENSION snowid VERSION '1.5';
CREATE ROLE regress_upgrade_taker;
CREATE ROLE regress_upgrade_other;
REVOKE EXECUTE ON FUNCTION snowid_ticket_next(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowid_ticket_next(regclass) TO regress_upgrade_taker WITH GRANT OPTION;
ALTER EXTENSION snowid UPDATE TO '1.6';
SELECT p.oid::regprocedure AS function,
	   has_function_privilege('regress_upgrade_taker', p.oid, 'EXECUTE') AS taker_may,
	   has_function_privilege('regress_upgrade_taker', p.oid, 'EXECUTE WITH GRANT OPTION') AS taker_may_grant,
	   has_function_privilege('regress_upgrade_other', p.oid, 'EXECUTE') AS other_may
  FROM pg_proc p WHERE p.proname = 'snowid_ticket_next' ORDER BY p.oid::regprocedure::text;
-- not as initial privileges (pg_dump leaves those out): as after CREATE
-- EXTENSION, none are recorded
SELECT p.oid::regprocedure AS function, i.privtype, i.initprivs IS NOT NULL AS recorded
  FROM pg_proc p LEFT JOIN pg_init_privs i ON i.objoid = p.oid AND i.classoid = 'pg_proc'::regclass
 WHERE p.proname = 'snowid_ticket_next' ORDER BY p.oid::regprocedure::text;
DROP EXTENSION snowid;
DROP ROLE regress_upgrade_taker, regress_upgrade_other;
CREATE EXTENSION snowid;
