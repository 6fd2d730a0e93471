--
-- Who may generate.
--  * EXECUTE on the generating functions decides who may take IDs and
--    ticket values; the README's recipe revokes it from PUBLIC and grants it
--    to the roles that generate.
--  * A column DEFAULT snowid_next() runs as the inserting role, which needs
--    EXECUTE on snowid_next().
--  * snowid.max_batch bounds one snowid_next_batch() call of a role that is
--    not a superuser; only a superuser can raise it.
--
CREATE ROLE regress_gen_app;
CREATE ROLE regress_gen_other;
CREATE TABLE gen_priv (id bigint PRIMARY KEY DEFAULT snowid_next(), note text);
GRANT SELECT, INSERT ON gen_priv TO regress_gen_app, regress_gen_other;
SELECT snowid_ticket_create('gen_priv_ticket');
GRANT USAGE ON SEQUENCE gen_priv_ticket TO regress_gen_app, regress_gen_other;

-- The recipe.
REVOKE EXECUTE ON FUNCTION snowid_next(), snowid_next_batch(integer),
	snowid_ticket_next(regclass), snowid_ticket_next(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowid_next(), snowid_next_batch(integer),
	snowid_ticket_next(regclass), snowid_ticket_next(text) TO regress_gen_app;

-- Without the grant: SQLSTATE 42501 from every generating function, and
-- from an INSERT that relies on the column default.
SET ROLE regress_gen_other;
SELECT snowid_next();
INSERT INTO gen_priv (note) VALUES ('default, no grant');
\set VERBOSITY sqlstate
SELECT snowid_next();
SELECT count(*) FROM snowid_next_batch(10);
SELECT snowid_ticket_next('gen_priv_ticket');
SELECT snowid_ticket_next('gen_priv_ticket'::regclass);
INSERT INTO gen_priv (note) VALUES ('default, no grant');
\set VERBOSITY default
-- A value given explicitly needs no EXECUTE, and decoding stays open to all.
INSERT INTO gen_priv (id, note) VALUES (42, 'explicit');
SELECT snowid_node(id) IS NOT NULL AS decodes FROM gen_priv WHERE id = 42;
RESET ROLE;

-- With the grant, all of them work, the column default too.
SET ROLE regress_gen_app;
SELECT snowid_next() > 0 AS next_ok;
SELECT count(*) AS batch_ok FROM snowid_next_batch(10);
SELECT snowid_ticket_next('gen_priv_ticket') > 0 AS ticket_text_ok;
SELECT snowid_ticket_next('gen_priv_ticket'::regclass) > 0 AS ticket_regclass_ok;
INSERT INTO gen_priv (note) VALUES ('default, granted') RETURNING id > 42 AS default_ok;

-- snowid.max_batch: readable by all, set only by a superuser; a batch
-- beyond it is refused with SQLSTATE 53400 for a role that is not one.
SELECT name, setting, context, min_val, max_val, short_desc <> '' AS described
  FROM pg_settings WHERE name = 'snowid.max_batch';
SET snowid.max_batch = 1000000;
SELECT count(*) FROM snowid_next_batch(65536);
SELECT count(*) FROM snowid_next_batch(65537);
\set VERBOSITY sqlstate
SELECT count(*) FROM snowid_next_batch(65537);
\set VERBOSITY default
RESET ROLE;
-- A superuser is not bound by it, and can raise it: for its own session
-- (and the roles it then sets), or for a role at its next login.
SELECT count(*) AS superuser_batch FROM snowid_next_batch(65537);
SET snowid.max_batch = 100000;
SET ROLE regress_gen_app;
SELECT count(*) AS raised_batch FROM snowid_next_batch(100000);
RESET ROLE;
RESET snowid.max_batch;
ALTER ROLE regress_gen_app SET snowid.max_batch = 200000;
SELECT setconfig FROM pg_db_role_setting
 WHERE setrole = 'regress_gen_app'::regrole;
ALTER ROLE regress_gen_app RESET snowid.max_batch;

-- Back to the default privileges, so that nothing else is affected.
REVOKE EXECUTE ON FUNCTION snowid_next(), snowid_next_batch(integer),
	snowid_ticket_next(regclass), snowid_ticket_next(text) FROM regress_gen_app;
GRANT EXECUTE ON FUNCTION snowid_next(), snowid_next_batch(integer),
	snowid_ticket_next(regclass), snowid_ticket_next(text) TO PUBLIC;
SET ROLE regress_gen_other;
SELECT snowid_next() > 0 AS public_again;
RESET ROLE;
DROP TABLE gen_priv;
DROP SEQUENCE gen_priv_ticket;
DROP ROLE regress_gen_app;
DROP ROLE regress_gen_other;
