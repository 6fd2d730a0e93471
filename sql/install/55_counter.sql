-- Counters per key: one counter (a name, its type, its mode) and a value per
-- key, with no catalog object per key.  A counter's handle is a sequence of
-- its name, owned by its creator: its privileges (USAGE or UPDATE to take
-- values, as nextval), owner, comment and schema are the counter's, and
-- pg_dump keeps them; the sequence itself is never advanced.  The keys'
-- positions are rows of snowid_counter_key, which pg_dump keeps too.

CREATE TABLE snowid_counter (
	counter regclass PRIMARY KEY,
	type regtype NOT NULL
		CONSTRAINT snowid_counter_type_check
		CHECK (type OPERATOR(pg_catalog.=) 'integer'::pg_catalog.regtype OR
			   type OPERATOR(pg_catalog.=) 'bigint'::pg_catalog.regtype),
	mode text NOT NULL
		CONSTRAINT snowid_counter_mode_check
		CHECK (mode OPERATOR(pg_catalog.=) 'gapless' OR
			   mode OPERATOR(pg_catalog.=) 'fast'),
	start bigint NOT NULL,
	block integer NOT NULL			-- fast: values a key reserves at a time
		CONSTRAINT snowid_counter_block_check CHECK (block >= 1),
	stamp bigint NOT NULL,			-- creation time in microseconds
	stripe integer,					-- this server's stripe, of stripes (fast);
	stripes integer,				-- both NULL: not striped
	state regclass,					-- Citus: its distributed state table
	CONSTRAINT snowid_counter_stripe_check
		CHECK ((stripe IS NULL) OPERATOR(pg_catalog.=) (stripes IS NULL) AND
			   stripe >= 0 AND stripe < stripes)
);

COMMENT ON TABLE snowid_counter IS
'counters per key of this database: name (its sequence), type, mode, first value, this server''s stripe and, on Citus, the distributed table of its keys (written by snowid_counter_create, removed when the counter is dropped)';

-- One row per key used, written in the caller's transaction: the last value
-- given to it (gapless), or the last of the blocks reserved for it (fast:
-- every value handed out lies at or below).  No row: the key's next value
-- is the start.
CREATE TABLE snowid_counter_key (
	counter regclass NOT NULL,
	key text NOT NULL,
	last bigint NOT NULL,
	PRIMARY KEY (counter, key)
);

COMMENT ON TABLE snowid_counter_key IS
'the last value each key of a counter has been given (gapless) or reserved (fast), written by snowid_counter_next, snowid_counter_restart and snowid_counter_drop_key';

SELECT pg_catalog.pg_extension_config_dump('snowid_counter', '');
-- Only the rows of counters that exist: a fast counter created and used in
-- a transaction that rolled back leaves its keys' rows (their blocks were
-- committed by the server process); dumped, such a row's counter (a bare
-- OID) could be a live counter's after a restore, and its conflict would
-- fail the restore of every key's row.
SELECT pg_catalog.pg_extension_config_dump('snowid_counter_key',
	'WHERE counter OPERATOR(pg_catalog.=) ANY (SELECT c.counter FROM @extschema@.snowid_counter c)');

-- Everyone may read the settings; the keys' positions are read through
-- snowid_counter_current() (SELECT or USAGE on the counter) and by the
-- database owner, whose pg_dump copies both tables.
REVOKE ALL ON snowid_counter FROM PUBLIC;
REVOKE ALL ON snowid_counter_key FROM PUBLIC;
GRANT SELECT (counter, type, mode, start, block, stripe, stripes, state)
	ON snowid_counter TO PUBLIC;
GRANT SELECT ON snowid_counter TO pg_database_owner;
GRANT SELECT ON snowid_counter_key TO pg_database_owner;

CREATE FUNCTION snowid_counter_create(name text,
									  type regtype DEFAULT 'bigint',
									  mode text DEFAULT 'gapless',
									  start bigint DEFAULT 1,
									  block integer DEFAULT NULL,
									  stripe integer DEFAULT NULL,
									  stripes integer DEFAULT NULL,
									  colocate_with regclass DEFAULT NULL)
RETURNS regclass
AS 'MODULE_PATHNAME', 'snowid_counter_create'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_create(text, regtype, text, bigint, integer, integer, integer, regclass) IS
'create counter name: values start, start + 1, ... per key, of type integer or bigint, in mode gapless (taken in the caller''s transaction) or fast (from shared memory, blocks of at least block values, default 100, reserved per key in a committed transaction of their own); with stripe k of stripes n (fast), this server gives a key only start + k + i * n (stripe 0 of 1: this server is the counter''s only one); on Citus, its keys'' rows in a table distributed co-located with colocate_with';

CREATE FUNCTION snowid_counter_next(counter text, key text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_counter_next'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_next(text, text) IS
'next value of key of the counter of that name in the search_path (needs USAGE or UPDATE on it)';

CREATE FUNCTION snowid_counter_next(counter text, key bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_counter_next'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_next(text, bigint) IS
'next value of key (its decimal text is the key) of the counter of that name in the search_path (needs USAGE or UPDATE on it)';

CREATE FUNCTION snowid_counter_current(counter text, key text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_counter_current'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_counter_current(text, text) IS
'last value given to key by the counter (NULL if none; needs SELECT or USAGE on it)';

CREATE FUNCTION snowid_counter_current(counter text, key bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_counter_current'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_counter_current(text, bigint) IS
'last value given to key by the counter (NULL if none; needs SELECT or USAGE on it)';

CREATE FUNCTION snowid_counter_restart(counter text, key text, next bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'snowid_counter_restart'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_restart(text, text, bigint) IS
'make next the next value of key, never at or below a value already given (needs UPDATE on the counter)';

CREATE FUNCTION snowid_counter_restart(counter text, key bigint, next bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'snowid_counter_restart'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_restart(text, bigint, bigint) IS
'make next the next value of key, never at or below a value already given (needs UPDATE on the counter)';

CREATE FUNCTION snowid_counter_drop_key(counter text, key text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowid_counter_drop_key'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_drop_key(text, text) IS
'forget key: its next use starts again at the counter''s start (only the counter''s owner)';

CREATE FUNCTION snowid_counter_drop_key(counter text, key bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowid_counter_drop_key'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_drop_key(text, bigint) IS
'forget key: its next use starts again at the counter''s start (only the counter''s owner)';

CREATE FUNCTION snowid_counter_cache(OUT keys bigint, OUT capacity bigint,
									 OUT evictions bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowid_counter_cache'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_counter_cache() IS
'keys of fast counters cached in this server''s shared memory (all databases), the most it holds (snowid.counter_keys) and keys evicted since start';

CREATE FUNCTION snowid_counter_drop(counter text)
RETURNS void
AS 'MODULE_PATHNAME', 'snowid_counter_drop'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowid_counter_drop(text) IS
'drop a counter and all its keys (only its owner; DROP SEQUENCE of its name does the same)';

-- A fast counter's block: reserved in a transaction of its own, committed
-- (durably) before any of its values is handed out, so no rollback or crash
-- of the caller gives a value twice.  snowid_counter_reserve hands the call
-- to a server process of the database (registry_server.c), which applies
-- snowid_counter_reserve_serve and answers after its commit.  The caller's
-- privilege on the counter is checked before (counter_fast.c); no user
-- calls either function.
CREATE FUNCTION snowid_counter_reserve(counter oid, key text, step bigint,
									   first bigint)
RETURNS bigint
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'snowid_registry_forward';

REVOKE ALL ON FUNCTION snowid_counter_reserve(oid, text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_counter_reserve(oid, text, bigint, bigint) IS
'counter, internal: reserves the next values of a key of a fast counter (the row moves by step; first at its first use) in a transaction of a server process, committed before it answers with the last of them; called by snowid_counter_next, no user may call it';

CREATE FUNCTION snowid_counter_reserve_serve(counter oid, key text,
											 step bigint, first bigint)
RETURNS bigint
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'snowid_counter_reserve_serve';

REVOKE ALL ON FUNCTION snowid_counter_reserve_serve(oid, text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowid_counter_reserve_serve(oid, text, bigint, bigint) IS
'counter, internal: what snowid_counter_reserve does (the key''s row: last += step, or first at its first use), applied by the database''s server process in a transaction of its own; no user may call it';

-- On Citus, a counter's keys are rows of a state table of its own,
-- distributed co-located with the table it numbers, written as the caller
-- (Citus lets one user write a transaction's shards of a group): its
-- owner grants SELECT, INSERT, UPDATE on it to the counter's takers (of a
-- fast counter, each node's server process writes it as its owner).  The
-- rows obey the counter's privileges whoever writes them, as checked by
-- this trigger on every shard of the state table, with the counter's
-- handle on the shard's node (found through snowid_counter.state): a row
-- never moves back; a key starts at the counter's start (or later, for a
-- role with UPDATE on the counter, as snowid_counter_restart) and never
-- below it; a gapless key moves on by one value (a taker's next) or, with
-- UPDATE on the counter, further (a restart); only the counter's owner
-- deletes a row (drops a key): the counter's creator keeps the grants on
-- the state table after the counter has changed hands.  The common case,
-- a move by one, reads nothing.
CREATE FUNCTION snowid_counter_forward()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	base text;
	counter pg_catalog.regclass;
	owner oid;
	lowest bigint;
	fast boolean;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		IF NEW.last < OLD.last THEN
			RAISE EXCEPTION 'a counter''s key cannot go back'
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('Key %s has been given values up to %s; %s would give them again.',
												 OLD.key, OLD.last, NEW.last),
					  HINT = 'Move keys with snowid_counter_restart(), forward only.';
		END IF;
		IF NEW.last - 1 <= OLD.last THEN
			RETURN NEW;
		END IF;
	END IF;
	-- the counter whose state table this is a shard of (or is)
	base := substring(TG_TABLE_NAME FROM '^(snowid_counter_state_[0-9a-f]{16})(?:_[0-9]+)?$');
	SELECT c.counter, s.relowner, c.start, c.mode = 'fast'
	  INTO counter, owner, lowest, fast
	  FROM @extschema@.snowid_counter c
	  JOIN pg_catalog.pg_class s ON s.oid = c.counter
	 WHERE c.state = pg_catalog.to_regclass(pg_catalog.format('%I.%I', TG_TABLE_SCHEMA, base));
	IF TG_OP = 'DELETE' THEN
		IF owner IS NULL OR NOT pg_catalog.pg_has_role(owner, 'USAGE') THEN
			RAISE EXCEPTION 'only the owner of a counter may drop its keys'
				USING ERRCODE = 'insufficient_privilege',
					  DETAIL = pg_catalog.format('Key %s of the counter whose keys are in %I.%I would start over and give its values again%s.',
												 OLD.key, TG_TABLE_SCHEMA, base,
												 CASE WHEN owner IS NULL THEN '; this node has no such counter' ELSE '' END),
					  HINT = 'The counter''s owner drops a key with snowid_counter_drop_key(), on a node where the counter has been created.';
		END IF;
		RETURN OLD;
	END IF;
	-- (a node without the counter: nothing to check against; Citus may
	-- copy rows into a shard there)
	IF counter IS NULL THEN
		RETURN NEW;
	END IF;
	IF TG_OP = 'INSERT' AND NEW.last < lowest - 1 THEN
		RAISE EXCEPTION 'key "%" of counter % cannot start below the counter''s start', NEW.key, counter
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = pg_catalog.format('Its values start at %s; the key''s last value would be %s.', lowest, NEW.last),
				  HINT = 'Take keys with snowid_counter_next(), move them with snowid_counter_restart().';
	END IF;
	IF fast OR (TG_OP = 'INSERT' AND NEW.last = lowest)
		OR pg_catalog.has_sequence_privilege(counter, 'UPDATE') THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION 'permission denied to move key "%" of counter % forward', NEW.key, counter
		USING ERRCODE = 'insufficient_privilege',
			  DETAIL = pg_catalog.format('A taker moves a gapless key by one value (to %s); moving it to %s skips values, as snowid_counter_restart() does, which needs UPDATE on the counter.',
										 CASE WHEN TG_OP = 'INSERT' THEN lowest ELSE OLD.last + 1 END, NEW.last),
			  HINT = 'Take values with snowid_counter_next().';
END
$$;

REVOKE ALL ON FUNCTION snowid_counter_forward() FROM PUBLIC;

COMMENT ON FUNCTION snowid_counter_forward() IS
'counter, internal: trigger before INSERT, UPDATE or DELETE on the state table of a counter on Citus (and its shards): refuses to move a key''s last value back or below the start, to move a gapless key by more than one value without UPDATE on the counter, and a delete (a key dropped) by a role other than the counter''s owner';

-- DROP of a ticket sequence or of a counter's sequence (directly, by
-- DROP SCHEMA, DROP OWNED, ...) removes its rows: the ticket's in
-- snowid_ticket (with snowid preloaded, its object-access hook has done
-- that already, in every mode; this covers servers that load snowid only
-- on demand), the counter's in snowid_counter and snowid_counter_key and,
-- on the Citus coordinator, its state table.  One trigger for both (until
-- 2.1 tickets had snowid_ticket_dropped).
-- SECURITY DEFINER: the dropping user need not be allowed to write the
-- tables; the search_path is fixed.
CREATE FUNCTION snowid_dropped()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	st pg_catalog.regclass;
	coordinator boolean;
BEGIN
	FOR st IN
		WITH d AS (
			SELECT objid FROM pg_catalog.pg_event_trigger_dropped_objects()
			WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			  AND objsubid = 0),
		t AS (
			DELETE FROM @extschema@.snowid_ticket t USING d
			WHERE t.seqrelid::pg_catalog.oid = d.objid),
		k AS (
			DELETE FROM @extschema@.snowid_counter_key k USING d
			WHERE k.counter::pg_catalog.oid = d.objid)
		DELETE FROM @extschema@.snowid_counter c USING d
		WHERE c.counter::pg_catalog.oid = d.objid
		RETURNING c.state
	LOOP
		CONTINUE WHEN st IS NULL
			OR NOT EXISTS (SELECT FROM pg_catalog.pg_class WHERE oid = st);
		IF coordinator IS NULL THEN
			EXECUTE 'SELECT pg_catalog.citus_is_coordinator()' INTO coordinator;
		END IF;
		IF coordinator THEN
			EXECUTE pg_catalog.format('DROP TABLE %s', st);
		END IF;
	END LOOP;
END
$$;

REVOKE ALL ON FUNCTION snowid_dropped() FROM PUBLIC;

COMMENT ON FUNCTION snowid_dropped() IS
'event trigger on sql_drop: removes the rows of a dropped ticket sequence from snowid_ticket (where snowid is not preloaded; with it, its object-access hook does it in every mode) and of a dropped counter from snowid_counter and snowid_counter_key, and on the Citus coordinator its state table';

CREATE EVENT TRIGGER snowid_dropped ON sql_drop
EXECUTE FUNCTION snowid_dropped();

-- Several primaries (logical replication with origin = none, PostgreSQL
-- 16+): a counter that is neither striped nor declared the only one
-- (stripe 0 of 1) would count on every server from the same rows.
-- snowid_counter_create refuses one in such a database; a subscription
-- with origin = none made, or altered, after such counters exist gets a
-- WARNING naming them (refusing there would leave the replication slot
-- that CREATE SUBSCRIPTION has already made on the publisher).
CREATE FUNCTION snowid_counter_subscription_check()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'snowid_counter_subscription_check'
LANGUAGE C;

REVOKE ALL ON FUNCTION snowid_counter_subscription_check() FROM PUBLIC;

COMMENT ON FUNCTION snowid_counter_subscription_check() IS
'counter, internal: event trigger on CREATE and ALTER SUBSCRIPTION: warns when the database subscribes with origin = none (several primaries) and has counters that are not striped';

CREATE EVENT TRIGGER snowid_counter_subscription_check ON ddl_command_end
WHEN TAG IN ('CREATE SUBSCRIPTION', 'ALTER SUBSCRIPTION')
EXECUTE FUNCTION snowid_counter_subscription_check();
