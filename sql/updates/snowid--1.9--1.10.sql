/* snowid--1.9--1.10.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.10'" to load this file. \quit

-- 1.10.  Each function this version changes is replaced whole below, in a
-- section of its own per change; nothing else moves.

-- ---- i29 rows held open: no member's transaction left open keeps another
-- out of a registry row it needs.  A claim of a node whose row another
-- member's open transaction wrote (a claim of the node after its lease ran
-- out, then no COMMIT), and a release of it, end that session once its
-- transaction is 1 s old and try once more, as a pool's grant and the
-- registry's layout did; every such retry now waits for the row while the
-- ended transaction rolls back, queued ahead of any later session
-- (snowid_registry_wait_row, new); snowid_registry_unblock reads
-- pg_stat_activity anew each round, terminates without waiting, and waits
-- for younger holders only while its caller's transaction is under 0.5 s
-- old; and a transaction that called the registry's functions cannot be
-- prepared (snowid_registry_no_prepare, new).
-- snowid_registry_unblock (and its comment), snowid_pool_lock,
-- snowid_registry_claim_settings, snowid_registry_claim and
-- snowid_registry_release replaced; their other comments and grants stay ----

-- A transaction that locked rows of the registry cannot be prepared: its
-- locks would outlive every session snowid_registry_unblock could end
-- (src/registry_xact.c).  Every registry function that locks a row calls
-- this first (from 1.10).
CREATE FUNCTION snowid_registry_no_prepare()
RETURNS void
AS 'MODULE_PATHNAME', 'snowid_registry_no_prepare'
LANGUAGE C VOLATILE;

REVOKE ALL ON FUNCTION snowid_registry_no_prepare() FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_no_prepare() IS
'registry, internal: marks the transaction so that its PREPARE TRANSACTION fails (0A000): its row locks would keep other members out with no session to end';

-- No member holds a registry lock beyond one call.  A member's login role
-- writes registry rows only through the functions here, each one statement
-- of its worker; a role that leaves the transaction of such a call open,
-- or makes the call part of a long statement, would hold the rows it
-- locked for as long as it likes.  Refusing calls in a transaction block
-- would not stop the long statement, so a caller that finds a row locked
-- ends the holder instead: sessions that are not a superuser's and hold a
-- row lock or a write on one of p_tables in this database, in a
-- transaction 1 s old or more, are terminated, without waiting for them
-- to exit; younger ones (another member's call under way) are waited for,
-- but only while the caller's own transaction is under 0.5 s old, so that
-- the caller never holds a row lock in a transaction old enough for
-- another caller to end it.  True when none is left but those ended, so
-- that the caller waits for the row while their transactions roll back
-- (snowid_registry_wait_row).  False when a younger one still holds (the member asks again a
-- moment later, when it is old enough to be ended), when a superuser's
-- session holds on, or a prepared transaction (which no session holds;
-- PREPARE of a transaction that called the registry's functions is
-- refused from 1.10: snowid_registry_no_prepare).  Each round reads
-- pg_stat_activity anew (its snapshot would otherwise stay as the first
-- round read it, and judge a session by a transaction it has ended).
CREATE OR REPLACE FUNCTION snowid_registry_unblock(p_tables regclass[])
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_until timestamptz := pg_catalog.now() OPERATOR(pg_catalog.+) '500 ms'::pg_catalog.interval;
	v_db pg_catalog.oid := (SELECT d.oid FROM pg_catalog.pg_database d
							 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
	v_b record;
	v_wait boolean;
	v_held boolean;
BEGIN
	LOOP
		PERFORM pg_catalog.pg_stat_clear_snapshot();
		v_wait := false;
		v_held := false;
		IF EXISTS (SELECT FROM pg_catalog.pg_locks l
					WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.granted
					  AND l.pid IS NULL
					  AND l.database OPERATOR(pg_catalog.=) v_db
					  AND l.relation OPERATOR(pg_catalog.=) ANY (p_tables::pg_catalog.oid[])) THEN
			RETURN false;	-- a prepared transaction
		END IF;
		FOR v_b IN
			SELECT DISTINCT l.pid, a.xact_start, coalesce(r.rolsuper, true) AS super
			  FROM pg_catalog.pg_locks l
			  JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
			  LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.usesysid
			 WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.granted
			   AND l.mode OPERATOR(pg_catalog.=) ANY ('{RowShareLock,RowExclusiveLock}'::pg_catalog.text[])
			   AND l.database OPERATOR(pg_catalog.=) v_db
			   AND l.relation OPERATOR(pg_catalog.=) ANY (p_tables::pg_catalog.oid[])
			   AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
		LOOP
			IF v_b.super THEN
				v_held := true;
			ELSIF v_b.xact_start IS NULL THEN
				CONTINUE;		-- its transaction ended meanwhile
			ELSIF v_b.xact_start OPERATOR(pg_catalog.>)
				  (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) '1 s'::pg_catalog.interval) THEN
				v_wait := true;	-- a call still running
			ELSE
				BEGIN
					IF NOT pg_catalog.pg_terminate_backend(v_b.pid) THEN
						v_held := true;
					END IF;
				EXCEPTION WHEN insufficient_privilege THEN
					-- (the extension's owner is not a superuser)
					v_held := true;
				END;
			END IF;
		END LOOP;
		IF v_held OR (v_wait AND pg_catalog.clock_timestamp() OPERATOR(pg_catalog.>) v_until) THEN
			RETURN false;
		ELSIF NOT v_wait THEN
			RETURN true;
		END IF;
		PERFORM pg_catalog.pg_sleep(0.01);
	END LOOP;
END
$$;

COMMENT ON FUNCTION snowid_registry_unblock(regclass[]) IS
'registry, internal: terminates sessions that are not a superuser''s and hold a row lock on the tables in a transaction 1 s old or more (younger ones waited for while the caller''s transaction is under 0.5 s old); true when none is left but those, whose rows the caller then waits for';

-- A row that a call found locked (NOWAIT), locked for this transaction
-- after all: snowid_registry_unblock ends the sessions that held it, then
-- p_lock (a SELECT ... FOR UPDATE of that row, waiting) waits at most
-- 300 ms for their transactions to roll back, queued ahead of any session
-- that comes to lock it after (those fail: every registry function locks
-- NOWAIT); again, up to five rounds, where another session took the row
-- between the end of one and this call's wait.  True once the row is
-- locked (or gone); false when it stays held (a superuser's session, a
-- transaction too young to end, or five rounds lost).  p_lock is built by
-- the registry's own functions from their arguments (never a caller's
-- text): this function is not for PUBLIC.
CREATE FUNCTION snowid_registry_wait_row(p_tables regclass[], p_lock text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	FOR v_round IN 1..5 LOOP
		IF NOT @extschema@.snowid_registry_unblock(p_tables) THEN
			RETURN false;
		END IF;
		BEGIN
			-- (lock_timeout as it was again when this function returns)
			PERFORM pg_catalog.set_config('lock_timeout', '300ms', true);
			EXECUTE p_lock;
			RETURN true;
		EXCEPTION WHEN lock_not_available THEN
			NULL;
		END;
	END LOOP;
	RETURN false;
END
$$;

REVOKE ALL ON FUNCTION snowid_registry_wait_row(regclass[], text) FROM PUBLIC;

COMMENT ON FUNCTION snowid_registry_wait_row(regclass[], text) IS
'registry, internal: locks a row another session held after all, ending that session (snowid_registry_unblock) and waiting for its rollback, queued ahead of later lockers; false when it stays held';

-- The pool's row locked for this transaction (NOWAIT, then after
-- snowid_registry_wait_row); lock_not_available if it stays held.  Its
-- transaction cannot be prepared.
CREATE OR REPLACE FUNCTION snowid_pool_lock(p_pool text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM @extschema@.snowid_registry_no_prepare();
	PERFORM FROM @extschema@.snowid_pool p WHERE p.name = p_pool
	  FOR UPDATE NOWAIT;
EXCEPTION WHEN lock_not_available THEN
	IF NOT @extschema@.snowid_registry_wait_row(
			ARRAY[pg_catalog.format('%I.snowid_pool', '@extschema@')::regclass,
				  pg_catalog.format('%I.snowid_pool_range', '@extschema@')::regclass],
			pg_catalog.format('SELECT FROM %I.snowid_pool p WHERE p.name OPERATOR(pg_catalog.=) %L FOR UPDATE',
							  '@extschema@', p_pool)) THEN
		RAISE;
	END IF;
END
$$;

-- Step 1: the settings; the layout: the first claim sets it, every other
-- must match.  A claim that finds the layout being set by a transaction
-- left open (a member's first claim, then no COMMIT) ends that member's
-- session once its transaction is 1 s old (snowid_registry_unblock), as a
-- pool's grant does, and tries once more, waiting for the row at most 2 s:
-- no member keeps the others out.
CREATE OR REPLACE FUNCTION snowid_registry_claim_settings(p_layout text)
RETURNS snowid_registry_settings
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_set @extschema@.snowid_registry_settings;
BEGIN
	SELECT s.* INTO v_set FROM @extschema@.snowid_registry_settings s;
	IF NOT FOUND OR v_set.layout IS NULL THEN
		FOR v_try IN 1..2 LOOP
			BEGIN
				IF v_try = 2 THEN
					-- the holder ended, its transaction rolling back: wait
					-- for the row (lock_timeout as it was again on return)
					PERFORM pg_catalog.set_config('lock_timeout', '2s', true);
				END IF;
				INSERT INTO @extschema@.snowid_registry_settings AS s (only_row, layout)
				VALUES (true, p_layout)
				ON CONFLICT (only_row) DO UPDATE SET layout = p_layout
				 WHERE s.layout IS NULL;
				EXIT;
			EXCEPTION WHEN lock_not_available THEN
				IF v_try = 2 OR NOT @extschema@.snowid_registry_unblock(
						ARRAY[pg_catalog.format('%I.snowid_registry_settings', '@extschema@')::regclass]) THEN
					RAISE EXCEPTION 'the registry''s layout is being set by another transaction'
						USING ERRCODE = 'lock_not_available',
							  HINT = 'Claim again once that transaction ends.';
				END IF;
			END;
		END LOOP;
		SELECT s.* INTO v_set FROM @extschema@.snowid_registry_settings s;
	END IF;
	RETURN v_set;
END
$$;

CREATE OR REPLACE FUNCTION snowid_registry_claim(p_node_id integer,
									  p_auto boolean,
									  p_max_node integer,
									  p_layout text,
									  p_cluster_name text,
									  p_host text,
									  p_port integer,
									  p_system_identifier numeric,
									  p_start_id text,
									  p_secret text,
									  p_predecessor text,
									  p_promoted boolean,
									  p_lease_ms bigint,
									  p_takeover_ms bigint,
									  p_max_lead_ms bigint,
									  p_last_id bigint)
RETURNS TABLE (result text,
			   node_id integer,
			   lease_ms bigint,
			   holder text,
			   detail text,
			   floor_id bigint,
			   floor_until timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
ROWS 1
AS $$
DECLARE
	v_now timestamptz := pg_catalog.clock_timestamp();
	v_role name := pg_catalog.session_user();
	v_hash text;
	v_set @extschema@.snowid_registry_settings;
	v_lease_ms bigint;
	v_takeover_ms bigint;
	v_margin_ms bigint;
	v_until timestamptz;
	v_target integer := p_node_id;
	v_exclude integer[] := '{}';
	v_row @extschema@.snowid_registry_node;
	v_xmin text;
	v_pair record;
	v_dec record;
	v_held integer;
	v_busy integer := 0;
	v_unblocked boolean := false;
	v_host record;
BEGIN
	PERFORM @extschema@.snowid_registry_no_prepare();
	PERFORM @extschema@.snowid_registry_claim_check(p_max_node, p_layout,
		p_start_id, p_secret, p_lease_ms, p_takeover_ms, p_max_lead_ms);
	v_hash := encode(sha256(convert_to(p_secret, 'UTF8')), 'hex');

	-- 1. The settings and the layout.
	v_set := @extschema@.snowid_registry_claim_settings(p_layout);
	v_lease_ms := least(p_lease_ms,
						(EXTRACT(epoch FROM v_set.max_lease) * 1000)::bigint);
	v_takeover_ms := greatest(p_takeover_ms,
							  (EXTRACT(epoch FROM v_set.takeover_delay) * 1000)::bigint);
	v_margin_ms := (EXTRACT(epoch FROM v_set.lead_margin) * 1000)::bigint;
	v_until := v_now + v_lease_ms * interval '1 ms';

	result := 'conflict';
	node_id := p_node_id;
	lease_ms := NULL;
	holder := NULL;
	detail := NULL;
	floor_id := NULL;
	floor_until := NULL;

	IF v_set.layout <> p_layout THEN
		detail := format('the registry''s layout is %s; this server''s is %s',
						 v_set.layout, p_layout);
	ELSIF v_lease_ms < p_max_lead_ms + v_margin_ms THEN
		-- 2. The lease must outlast what the holder may issue ahead.
		detail := format('a lease of %s s is shorter than this server''s snowid.max_lead of %s s plus the registry''s margin of %s s: lengthen snowid.lease (the registry grants at most %s s) or shorten snowid.max_lead',
						 trim_scale(v_lease_ms / 1000.0),
						 trim_scale(p_max_lead_ms / 1000.0),
						 trim_scale(v_margin_ms / 1000.0),
						 trim_scale(EXTRACT(epoch FROM v_set.max_lease)));
	ELSIF p_node_id < 0 OR p_node_id > p_max_node THEN
		-- 3. The node ID must exist in the layout.
		RAISE EXCEPTION 'node ID % is out of range', p_node_id
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The layout has node IDs 0 to %s.', p_max_node);
	ELSE
		-- the bound of the IDs it issued, as it reports it: possible
		PERFORM @extschema@.snowid_registry_check_report('last ID', p_last_id,
			v_set.layout, p_max_lead_ms, v_margin_ms);
		result := NULL;
	END IF;
	-- the registry's own server: its node is granted to no member
	v_host := @extschema@.snowid_registry_claim_host(v_set, v_now);

	WHILE result IS NULL LOOP
		-- 4. The target node, unless named.
		IF v_target IS NULL THEN
			v_target := @extschema@.snowid_registry_claim_target(p_start_id,
				v_role, v_hash, v_now, p_max_node, v_exclude, v_host.node_id);
			IF v_target IS NULL THEN
				result := 'conflict';
				IF cardinality(v_exclude) = 0 THEN
					node_id := NULL;
					detail := format('all %s node IDs are held', p_max_node::bigint + 1);
				END IF;
				-- else: nothing else is free, the conflict over the node named
				EXIT;
			END IF;
		END IF;

		-- 5. The row of the target node, as it stands (not locked: a
		-- conflict holds nothing), and the decision on it.
		SELECT n AS r, n.xmin::text AS x INTO v_pair
		  FROM @extschema@.snowid_registry_node n WHERE n.node_id = v_target;
		IF FOUND THEN
			v_row := v_pair.r;
			v_xmin := v_pair.x;
		ELSE
			v_row := NULL;
			v_xmin := NULL;
		END IF;
		v_dec := @extschema@.snowid_registry_claim_decide(v_row, v_target, v_now,
			v_role, v_hash, p_start_id, p_system_identifier, p_predecessor,
			p_promoted, v_takeover_ms, v_host.node_id);
		result := v_dec.result;
		node_id := v_target;
		lease_ms := CASE WHEN v_dec.result = 'ok' THEN v_lease_ms END;
		holder := v_dec.holder;
		detail := v_dec.detail;
		floor_id := v_dec.floor_id;
		floor_until := v_dec.floor_until;

		IF v_dec.result = 'ok' AND NOT v_dec.own AND NOT v_dec.successor AND
		   current_setting('snowid_registry.reasserting', true) IS NOT DISTINCT FROM
			   format('%s %s', v_target, p_start_id) AND
		   @extschema@.snowid_registry_recovering() IS NOT NULL THEN
			-- a holder re-asserting a lease the registry may have
			-- forgotten (snowid_registry_reassert): the registry takes its
			-- word, so the node comes with a floor above every ID any
			-- holder may have issued under it until now (its max_lead is
			-- added by the member); a role lying to take a node thus
			-- issues above its real holder's IDs, never among them
			floor_until := greatest(floor_until, v_now);
		ELSIF v_dec.result = 'ok' AND NOT v_dec.own AND NOT v_dec.successor AND
		   @extschema@.snowid_registry_recovering() IS NOT NULL THEN
			-- a registry that may have forgotten grants no new holder
			-- until every live one has had time to re-assert its lease
			-- (snowid_registry_reassert)
			result := 'conflict';
			node_id := coalesce(p_node_id, v_target);
			lease_ms := NULL;
			holder := NULL;
			floor_id := NULL;
			floor_until := NULL;
			detail := coalesce(@extschema@.snowid_registry_recovering(),
							   'the registry may have forgotten its leases');
			RETURN NEXT;
			RETURN;
		END IF;

		IF result = 'ok' AND NOT v_dec.own AND v_host.issued_below IS NOT NULL THEN
			-- a new holder also stays above every ID the registry's own
			-- server has issued, under whichever node
			floor_id := greatest(floor_id, v_host.issued_below);
		END IF;

		IF result = 'ok' AND NOT v_dec.own THEN
			-- 6. A new holder: within the role's share of the nodes.
			v_held := @extschema@.snowid_registry_claim_role_holds(v_role, v_now, v_target);
			IF v_held >= v_set.max_nodes_per_role THEN
				result := 'conflict';
				lease_ms := NULL;
				floor_id := NULL;
				floor_until := NULL;
				detail := format('login role %s already holds %s node IDs, the most this registry grants one role (snowid_registry_settings.max_nodes_per_role)',
								 v_role, v_held);
				EXIT;
			END IF;
		END IF;

		IF result = 'ok' THEN
			-- 7. Write the row.
			BEGIN
				PERFORM @extschema@.snowid_registry_claim_write(v_row, v_xmin,
					v_target, p_cluster_name, p_host, p_port, p_system_identifier,
					p_start_id, p_layout, v_now, v_until, p_last_id, v_role, v_hash,
					p_max_lead_ms, v_dec.own, v_dec.row_floor);
			EXCEPTION WHEN lock_not_available OR unique_violation THEN
				-- another transaction wrote the row and is still open, or
				-- did meanwhile: a node of this server's own is not given
				-- up for it, nor one named, nor more than a few assigned
				-- ones.  A transaction left open there (a member's claim
				-- of a node whose lease ran out, then no COMMIT) would keep
				-- that node's holder out for as long as it likes: its
				-- session is ended once the transaction is 1 s old
				-- (snowid_registry_wait_row), the claim waits for the row,
				-- ahead of any later locker, and reads it again, once;
				-- still held, an error (the member keeps its lease and
				-- asks again).
				v_busy := v_busy + 1;
				IF v_dec.own OR v_dec.successor OR p_auto IS NOT TRUE OR v_busy > 3 THEN
					IF NOT v_unblocked AND @extschema@.snowid_registry_wait_row(
							ARRAY[pg_catalog.format('%I.snowid_registry_node', '@extschema@')::regclass],
							pg_catalog.format('SELECT FROM %I.snowid_registry_node n WHERE n.node_id OPERATOR(pg_catalog.=) %s FOR UPDATE',
											  '@extschema@', v_target)) THEN
						-- (a row inserted by a transaction that has not
						-- ended yet is waited for by the insert, at most
						-- 2 s; lock_timeout as it was again on return)
						PERFORM pg_catalog.set_config('lock_timeout', '2s', true);
						v_unblocked := true;
						v_busy := v_busy - 1;
						result := NULL;
						CONTINUE;
					END IF;
					RAISE EXCEPTION 'node % is being written by another transaction', v_target
						USING ERRCODE = 'lock_not_available',
							  HINT = 'Claim again in a moment.';
				END IF;
				result := 'conflict';
				lease_ms := NULL;
				floor_id := NULL;
				floor_until := NULL;
				detail := format('node %s is being claimed by another transaction', v_target);
			END;
		END IF;

		IF result = 'conflict' THEN
			-- an assigned node moves to another free one, except for its
			-- own successor, which takes it back once the old start is silent
			IF p_auto IS TRUE AND cardinality(v_exclude) < 64 AND
			   v_dec.successor IS NOT TRUE THEN
				v_exclude := v_exclude || v_target;
				v_target := NULL;
				result := NULL;
				CONTINUE;
			END IF;
			EXIT;
		END IF;
	END LOOP;
	RETURN NEXT;
END
$$;

-- A clean shutdown of the holder ends its lease at once.  The row is
-- written only if no other transaction holds it (not waited for: one that
-- has held it open for more than 1 s, a member's claim of the node after
-- its lease ran out, then no COMMIT, has its session ended by
-- snowid_registry_unblock, and the release waits for the row:
-- snowid_registry_wait_row); what the next holder must stay above is kept: the
-- latest time any holder could have issued an ID at.  Its transaction
-- cannot be prepared.
CREATE OR REPLACE FUNCTION snowid_registry_release(p_node_id integer, p_start_id text,
										p_secret text, p_last_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
	v_now timestamptz := pg_catalog.clock_timestamp();
	v_row @extschema@.snowid_registry_node;
BEGIN
	PERFORM @extschema@.snowid_registry_no_prepare();
	FOR v_try IN 1..2 LOOP
		BEGIN
			-- (the second time, the row is this transaction's already)
			SELECT n.* INTO v_row FROM @extschema@.snowid_registry_node n
			  WHERE n.node_id = p_node_id AND n.start_id = p_start_id
				AND n.holder_role = pg_catalog.session_user()
				AND n.secret_hash = encode(sha256(convert_to(coalesce(p_secret, ''), 'UTF8')), 'hex')
				AND n.released_at IS NULL
			  FOR UPDATE NOWAIT;
			EXIT;
		EXCEPTION WHEN lock_not_available THEN
			IF v_try = 2 OR NOT @extschema@.snowid_registry_wait_row(
					ARRAY[pg_catalog.format('%I.snowid_registry_node', '@extschema@')::regclass],
					pg_catalog.format('SELECT FROM %I.snowid_registry_node n WHERE n.node_id OPERATOR(pg_catalog.=) %s FOR UPDATE',
									  '@extschema@', p_node_id)) THEN
				RAISE;
			END IF;
		END;
	END LOOP;
	IF v_row.node_id IS NULL THEN
		RETURN false;
	END IF;
	-- the bound of the IDs it issued, as it reports it: possible
	PERFORM @extschema@.snowid_registry_check_report('last ID', p_last_id,
		v_row.layout, v_row.max_lead_ms,
		(SELECT (EXTRACT(epoch FROM s.lead_margin) * 1000)::bigint
		   FROM @extschema@.snowid_registry_settings s));
	UPDATE @extschema@.snowid_registry_node n
	   SET released_at = v_now, lease_until = v_now, last_seen = v_now,
		   last_id = greatest(n.last_id, p_last_id),
		   floor_until = greatest(n.floor_until,
								  v_now + coalesce(n.max_lead_ms, 0) * interval '1 ms')
	 WHERE n.node_id = p_node_id;
	RETURN true;
END
$$;

-- ---- end of i29 rows held open ----
