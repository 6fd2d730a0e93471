/* snowid--1.11--2.0.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '2.0'" to load this file. \quit

-- 2.0.  Each change has a section of its own below.

-- ---- i39 the registry's server process applies members' calls ----
-- Each registry function a member calls keeps its name, signature,
-- privileges (the grants to member roles) and comment, but is replaced in
-- place by the C function that hands the call to the registry's server
-- process (registry_server.c); what it did moves to <name>_serve, which
-- that process calls in a transaction of its own and no member may call:
-- it runs as its caller (SECURITY INVOKER), and only the server process
-- calls it as a superuser, so even a member granted EXECUTE on it (GRANT
-- ... ON ALL FUNCTIONS IN SCHEMA) cannot reach the registry's tables.
-- The body moves as the catalog holds it (1.11's install script), so it
-- is not written here again.
DO $serve$
DECLARE
	f regprocedure;
	def text;
BEGIN
	FOREACH f IN ARRAY ARRAY[
		'@extschema@.snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint)',
		'@extschema@.snowid_registry_reassert(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint, timestamptz)',
		'@extschema@.snowid_registry_release(integer, text, text, bigint)',
		'@extschema@.snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[])',
		'@extschema@.snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])',
		'@extschema@.snowid_pool_return(text, integer, numeric, text, text, bigint, bigint)']::regprocedure[]
	LOOP
		def := pg_catalog.pg_get_functiondef(f);
		-- CREATE OR REPLACE FUNCTION <schema>.<name>( -> <name>_serve(
		def := pg_catalog.regexp_replace(def,
			'^(CREATE OR REPLACE FUNCTION [^(]*?)\(', '\1_serve(');
		EXECUTE def;
		EXECUTE pg_catalog.format('ALTER FUNCTION %s SECURITY INVOKER',
			pg_catalog.regexp_replace(f::text, '\(', '_serve('));
		EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC',
			pg_catalog.regexp_replace(f::text, '\(', '_serve('));
		EXECUTE pg_catalog.format(
			'COMMENT ON FUNCTION %s IS %L',
			pg_catalog.regexp_replace(f::text, '\(', '_serve('),
			pg_catalog.format('registry, internal: what %s does, applied by the registry''s server process in a transaction of its own, session_user being the member''s role; no member may call it',
				(SELECT p.proname FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) f)));
		EXECUTE (SELECT pg_catalog.format(
			'CREATE OR REPLACE FUNCTION %s(%s) RETURNS %s LANGUAGE C VOLATILE %s AS %L, %L',
			pg_catalog.regexp_replace(f::text, '\(.*$', ''),
			pg_catalog.pg_get_function_arguments(p.oid),
			pg_catalog.pg_get_function_result(p.oid),
			CASE WHEN p.proretset THEN 'ROWS ' OPERATOR(pg_catalog.||) p.prorows ELSE '' END,
			'MODULE_PATHNAME', 'snowid_registry_forward')
			FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) f);
	END LOOP;
END
$serve$;

