
-- Logical replication (1.9).  Every table of snowid holds the state of its
-- own server: the settings of its tickets, or a registry's leases, pools and
-- ranges.  A FOR ALL TABLES publication carries them to other servers all
-- the same, where a change of them would overwrite or collide with the
-- subscriber's own rows.  This trigger, enabled REPLICA (it fires only
-- under session_replication_role = replica, as logical replication's
-- workers run), skips such a change with a WARNING when it arrives by
-- replication; the application's changes of the same transaction are
-- applied.  Named to fire before snowid_ticket_fixed.
CREATE FUNCTION snowid_local_only()
RETURNS trigger
AS 'MODULE_PATHNAME', 'snowid_local_only'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_local_only() IS
'trigger on snowid''s tables: skips, with a WARNING, a row change that arrives by logical replication, and refuses such a TRUNCATE (these tables hold the state of their own server)';

REVOKE ALL ON FUNCTION snowid_local_only() FROM PUBLIC;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_ticket
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_ticket ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_registry_settings
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_registry_settings ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_registry_installed
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_registry_installed ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_registry_node
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_registry_node ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_registry_role
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_registry_role ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_pool
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_pool ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_pool_range
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_pool_range ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_counter
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_counter ENABLE REPLICA TRIGGER snowid_local_only;

CREATE TRIGGER snowid_local_only
BEFORE INSERT OR UPDATE OR DELETE ON snowid_counter_key
FOR EACH ROW EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_counter_key ENABLE REPLICA TRIGGER snowid_local_only;

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
	END LOOP;
END
$guard$;

-- On the publisher, where the mistake is made: a CREATE or ALTER
-- PUBLICATION after which the publication carries any of snowid's tables
-- (FOR ALL TABLES, FOR TABLES IN SCHEMA of snowid's schema, or by name)
-- gets a WARNING that says so and what to publish instead.
CREATE FUNCTION snowid_publication_check()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'snowid_publication_check'
LANGUAGE C;

REVOKE ALL ON FUNCTION snowid_publication_check() FROM PUBLIC;

COMMENT ON FUNCTION snowid_publication_check() IS
'event trigger on CREATE and ALTER PUBLICATION: warns when the publication carries snowid''s own tables';

CREATE EVENT TRIGGER snowid_publication_check ON ddl_command_end
WHEN TAG IN ('CREATE PUBLICATION', 'ALTER PUBLICATION')
EXECUTE FUNCTION snowid_publication_check();
