/* snowid--2.0--2.1.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '2.1'" to load this file. \quit

-- 2.1.  Each change has a section of its own below.

-- ---- r21 snowid_registry_request: one typed request per operation ----
-- A member's call on the registry as one request (registry_request.c); it
-- makes the positional call as the caller, so it is left to PUBLIC and an
-- updated registry needs no new GRANT.
-- @function snowid_registry_request

-- ---- role-limit claim of a lapsed own node ----
-- A start taking back its own node after its lease ran out is counted
-- against max_nodes_per_role (step 6) like a new holder: 2.0 skipped the
-- count for a start's own node, so a role could claim other nodes while
-- its lease was out and then take it back, holding more than the limit.
-- @function snowid_registry_claim_serve

-- ---- claim-identity NULL port or system identifier refused ----
-- A claim with no port or no system identifier was kept (the identity
-- test was NULL, not true): refused now as any identity no server has.
-- @function snowid_registry_claim_write


-- ---- unblock the registry ends no session ----
-- From 2.0 only the registry's own server processes call the functions
-- that lock its rows: no member's session holds one, so none is ended
-- (snowid_registry_unblock, snowid_registry_wait_row) and no PREPARE
-- refused (snowid_registry_no_prepare; its C symbol stays, a no-op, for a
-- registry whose SQL is still 2.0's).  A row another server process holds
-- (a claim of an assigned node beside the node's renewal or release) is
-- waited for at most lock_timeout.  snowid_registry_claim_serve, above,
-- no longer calls them either.
-- @function snowid_registry_claim_settings
-- @function snowid_registry_release_serve
-- @function snowid_pool_lock
-- @function snowid_pool_report_serve
DROP FUNCTION snowid_registry_wait_row(regclass[], text);
DROP FUNCTION snowid_registry_unblock(regclass[]);
DROP FUNCTION snowid_registry_no_prepare();

-- ---- layout check: the registry's own layout skips the pattern ----
-- A renewal sends the layout the registry already holds (checked when it
-- was set); matching the pattern again was a third of a renewal's cost.
-- @function snowid_registry_layout_check

-- ---- counters: counters per key (issue 41) ----
-- The two tables (with the replication guard's row triggers of
-- 80_replication.sql) and the functions; a fast
-- counter's blocks are reserved by the database's server process.
-- @table snowid_counter
-- @table snowid_counter_key
-- @function snowid_counter_create
-- @function snowid_counter_next
-- @function snowid_counter_current
-- @function snowid_counter_restart
-- @function snowid_counter_drop_key
-- @function snowid_counter_cache
-- @function snowid_counter_drop
-- @function snowid_counter_forward
-- @function snowid_counter_reserve
-- @function snowid_counter_reserve_serve
-- @function snowid_counter_subscription_check
-- @event_trigger snowid_counter_subscription_check

-- What 80_replication.sql's DO block does for every table of the extension.
CREATE TRIGGER snowid_local_only_truncate BEFORE TRUNCATE ON snowid_counter
FOR EACH STATEMENT EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_counter ENABLE ALWAYS TRIGGER snowid_local_only_truncate;
COMMENT ON TRIGGER snowid_local_only_truncate ON snowid_counter IS
'refuses a TRUNCATE of this table that arrives by logical replication (snowid_local_only)';

CREATE TRIGGER snowid_local_only_truncate BEFORE TRUNCATE ON snowid_counter_key
FOR EACH STATEMENT EXECUTE FUNCTION snowid_local_only();
ALTER TABLE snowid_counter_key ENABLE ALWAYS TRIGGER snowid_local_only_truncate;
COMMENT ON TRIGGER snowid_local_only_truncate ON snowid_counter_key IS
'refuses a TRUNCATE of this table that arrives by logical replication (snowid_local_only)';

-- ---- dropped: one DROP event trigger for tickets and counters ----
-- snowid_ticket_dropped removed a dropped ticket's row; counters needed
-- the same for their two tables.  snowid_dropped does both, in one
-- statement, and replaces it.
DROP EVENT TRIGGER snowid_ticket_dropped;
DROP FUNCTION snowid_ticket_dropped();
-- @function snowid_dropped
-- @event_trigger snowid_dropped
