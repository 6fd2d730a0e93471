--
-- Every user-facing error of ticket sequences, and privileges.
--

-- Bad arguments.
SELECT snowid_ticket_create('te', 0, 0);
SELECT snowid_ticket_create('te', 0, -3);
SELECT snowid_ticket_create('te', -1, 2);
SELECT snowid_ticket_create('te', 2, 2);
SELECT snowid_ticket_create('te', 0, 1, 0);
SELECT snowid_ticket_create('te', 0, 1, -5);
SELECT snowid_ticket_create('te', 0, 1, 10, 2147483648, 'integer');
SELECT snowid_ticket_create('te', 0, 1, 10, -2147483649, 'integer');
SELECT snowid_ticket_create('te', 3, 4, 10, 2147483645, 'integer');
SELECT snowid_ticket_create('te', 0, 1, 10, 1, 'smallint');
SELECT snowid_ticket_create('te', 0, 1, 10, 1, 'numeric');
SELECT snowid_ticket_create('te', 0, 1, 10, 1, 'no_such_type');
SELECT snowid_ticket_create('no_such_schema.te');
SELECT snowid_ticket_create('a.b.c.d');
SELECT snowid_ticket_create('pg_temp.te');
SELECT snowid_ticket_create(NULL) IS NULL AS null_name;
-- Names that exist.
CREATE TABLE te_table (x int);
SELECT snowid_ticket_create('te_table');
SELECT snowid_ticket_create('te');
SELECT snowid_ticket_create('te');
SELECT snowid_ticket_create('public.te');
-- Nothing was left behind by the failures.
SELECT seqrelid FROM snowid_ticket ORDER BY 1;

-- Not a ticket sequence.
CREATE SEQUENCE plain_seq;
SELECT snowid_ticket_next('plain_seq');
SELECT snowid_ticket_next('te_table');
SELECT snowid_ticket_shard('plain_seq', 1);
SELECT snowid_ticket_next('no_such_relation'::regclass);
SELECT snowid_ticket_next('no_such_relation');

-- Privileges: like nextval, USAGE or UPDATE on the ticket sequence.
CREATE ROLE regress_ticket_user;
GRANT USAGE ON SCHEMA public TO regress_ticket_user;
SET ROLE regress_ticket_user;
SELECT snowid_ticket_next('te');
SELECT nextval('te');
-- Creating needs CREATE on the schema.
SELECT snowid_ticket_create('public.te_user');
-- Settings and the shard are public.
SELECT snowid_ticket_shard('te', 5);
SELECT ticket, blocks_reserved FROM snowid_tickets;
-- The catalog is read-only for users.
INSERT INTO snowid_ticket VALUES ('plain_seq', 0, 1, 1, 1, 'bigint', 0);
DELETE FROM snowid_ticket;
RESET ROLE;
GRANT USAGE ON SEQUENCE te TO regress_ticket_user;
SET ROLE regress_ticket_user;
SELECT snowid_ticket_next('te');
RESET ROLE;
REVOKE USAGE ON SEQUENCE te FROM regress_ticket_user;
GRANT UPDATE ON SEQUENCE te TO regress_ticket_user;
SET ROLE regress_ticket_user;
SELECT snowid_ticket_next('te');
RESET ROLE;
REVOKE UPDATE ON SEQUENCE te FROM regress_ticket_user;
SET ROLE regress_ticket_user;
SELECT snowid_ticket_next('te');
RESET ROLE;
-- With CREATE on a schema, a user makes and owns tickets, and drops them.
CREATE SCHEMA ticket_user_schema AUTHORIZATION regress_ticket_user;
SET ROLE regress_ticket_user;
SELECT snowid_ticket_create('ticket_user_schema.mine', 0, 1, 5);
SELECT snowid_ticket_next('ticket_user_schema.mine');
DROP SEQUENCE ticket_user_schema.mine;
RESET ROLE;
SELECT seqrelid FROM snowid_ticket ORDER BY 1;

DROP SCHEMA ticket_user_schema;
REVOKE USAGE ON SCHEMA public FROM regress_ticket_user;
DROP ROLE regress_ticket_user;
DROP SEQUENCE te, plain_seq;
DROP TABLE te_table;
SELECT count(*) AS rows_left FROM snowid_ticket;
