/* snowid--2.0--2.1.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '2.1'" to load this file. \quit

-- 2.1.  Each change has a section of its own below.

-- ---- r21 snowid_registry_request: one typed request per operation ----
-- A member's call on the registry as one request (registry_request.c); it
-- makes the positional call as the caller, so it is left to PUBLIC and an
-- updated registry needs no new GRANT.
-- @function snowid_registry_request
