/* snowid--1.5--1.6.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.6'" to load this file. \quit

-- 1.6: snowid on Citus (issue 23).

-- snowid_ticket_next(text): the ticket named by text and looked up in the caller's
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

-- Whoever may take values with snowid_ticket_next(regclass) may with the
-- text form, and no one else: its privileges are copied (an EXECUTE
-- revoked from PUBLIC stays revoked).
DO $$
DECLARE
	v_acl pg_catalog.aclitem[];
	v_grant record;
BEGIN
	SELECT p.proacl INTO v_acl FROM pg_catalog.pg_proc p
	 WHERE p.oid OPERATOR(pg_catalog.=)
		   '@extschema@.snowid_ticket_next(pg_catalog.regclass)'::pg_catalog.regprocedure;
	IF v_acl IS NULL THEN
		RETURN;					-- the default privileges, as the new one's
	END IF;
	REVOKE ALL ON FUNCTION @extschema@.snowid_ticket_next(text) FROM PUBLIC;
	FOR v_grant IN
		SELECT a.grantee, a.is_grantable FROM pg_catalog.aclexplode(v_acl) a
		 WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.snowid_ticket_next(text) TO %s%s',
			CASE WHEN v_grant.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grant.grantee)) END,
			CASE WHEN v_grant.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
END
$$;
