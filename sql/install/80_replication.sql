
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
'trigger on snowid''s tables: skips, with a WARNING, a change that arrives by logical replication (these tables hold the state of their own server)';

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
