/* snowid--1.8--1.9.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.9'" to load this file. \quit

-- 1.9.  Each function this version changes is replaced whole below, in a
-- section of its own per change; nothing else moves.

-- ---- i32 pgEdge snowflake: snowid_convert_column takes a column whose
-- default is pgEdge snowflake's nextval() (three new internal functions,
-- snowid_convert_column and its comment replaced) ----

-- From pgEdge's snowflake (issue 32): its 2.x keys are 41 bits of
-- milliseconds since 2023-01-01 00:00:00+00, 10 bits of node and 12 of
-- counter, which is snowid's layout with that epoch.  A column whose default
-- is snowflake.nextval() (its own sequence snowflake.id_seq) or
-- snowflake.nextval('seq'::regclass) (a sequence turned to snowflake by
-- convert_sequence_to_snowflake()) converts like a serial, once snowid's
-- layout and node are snowflake's.

-- The sequence a column's default takes pgEdge snowflake keys from, or NULL
-- if the default (p_def, as pg_get_expr writes it with the search_path
-- pinned; p_def_oid its pg_attrdef row) is not exactly a call of the
-- extension snowflake's nextval().  The call without an argument stores no
-- argument: its sequence is the one the function's default argument names.
CREATE FUNCTION snowid_convert_snowflake_seq(p_def_oid oid, p_def text)
RETURNS regclass
LANGUAGE plpgsql
STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_fn oid;
	v_nsp name;
	v_seq regclass;
BEGIN
	SELECT p.oid, n.nspname
	  INTO v_fn, v_nsp
	  FROM pg_catalog.pg_depend k
	  JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) k.refobjid
	  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
	 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
	   AND k.objid OPERATOR(pg_catalog.=) p_def_oid
	   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
	   AND p.proname OPERATOR(pg_catalog.=) 'nextval'
	   AND EXISTS (
		SELECT FROM pg_catalog.pg_depend e
		  JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) e.refobjid
		 WHERE e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
		   AND e.objid OPERATOR(pg_catalog.=) p.oid
		   AND e.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		   AND e.deptype OPERATOR(pg_catalog.=) 'e'
		   AND x.extname OPERATOR(pg_catalog.=) 'snowflake');
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	IF p_def OPERATOR(pg_catalog.=) pg_catalog.format('%I.nextval()', v_nsp) THEN
		SELECT s.oid::pg_catalog.regclass
		  INTO v_seq
		  FROM pg_catalog.pg_depend k
		  JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) k.refobjid
		 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
		   AND k.objid OPERATOR(pg_catalog.=) v_fn
		   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND s.relkind OPERATOR(pg_catalog.=) 'S';
		RETURN v_seq;
	END IF;
	FOR v_seq IN
		SELECT s.oid::pg_catalog.regclass
		  FROM pg_catalog.pg_depend k
		  JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) k.refobjid
		 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
		   AND k.objid OPERATOR(pg_catalog.=) p_def_oid
		   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND s.relkind OPERATOR(pg_catalog.=) 'S'
	LOOP
		IF p_def OPERATOR(pg_catalog.=) pg_catalog.format('%I.nextval(%L::regclass)', v_nsp, v_seq) THEN
			RETURN v_seq;
		END IF;
	END LOOP;
	RETURN NULL;
END
$$;

COMMENT ON FUNCTION snowid_convert_snowflake_seq(oid, text) IS
'conversion, internal: the sequence a column default that is exactly pgEdge snowflake''s nextval() takes its keys from (for nextval() without an argument, the sequence its default argument names); NULL for any other default';

-- Refuses (55000) to move keys of pgEdge snowflake to snowid_next() unless
-- snowid would read them as snowflake does and go on as the same node: the
-- extension is 2.x, snowid's layout is its layout, and snowflake.node (where
-- set) is snowid's node.
CREATE FUNCTION snowid_convert_snowflake_check(tab regclass, col name)
RETURNS void
LANGUAGE plpgsql
STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_version text;
	v_layout record;
	v_node text;
	v_node_id integer;		-- snowflake.node, NULL where not a number
BEGIN
	SELECT x.extversion INTO v_version
	  FROM pg_catalog.pg_extension x
	 WHERE x.extname OPERATOR(pg_catalog.=) 'snowflake';
	IF v_version IS NULL OR NOT v_version OPERATOR(pg_catalog.~) '^2\.' THEN
		RAISE EXCEPTION 'pgEdge snowflake % is not a version whose keys snowid can read', coalesce(v_version, '(none)')
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'snowid knows the layout of snowflake 2.x: 41 bits of milliseconds since 2023-01-01 00:00:00+00, 10 bits of node and 12 bits of counter.',
				  HINT = 'Update the extension snowflake to a 2.x version first (ALTER EXTENSION snowflake UPDATE).';
	END IF;

	SELECT * INTO v_layout FROM @extschema@.snowid_layout();
	IF v_layout.epoch OPERATOR(pg_catalog.<>) '2023-01-01 00:00:00+00'::pg_catalog.timestamptz
	   OR v_layout.tick OPERATOR(pg_catalog.<>) '1 ms'::pg_catalog.interval
	   OR v_layout.node_bits OPERATOR(pg_catalog.<>) 10
	   OR v_layout.sequence_bits OPERATOR(pg_catalog.<>) 12
	   OR v_layout.id_bits OPERATOR(pg_catalog.<>) 63 THEN
		RAISE EXCEPTION 'snowid''s layout is not the layout of the pgEdge snowflake keys in column "%" of table %', col, tab
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = pg_catalog.format('snowflake.nextval() makes 41 bits of milliseconds since 2023-01-01 00:00:00+00, 10 bits of node and 12 bits of counter; snowid here has epoch %s+00, a tick of %s ms, node_bits %s, sequence_bits %s and id_bits %s, so its functions would misread the old keys.',
											 pg_catalog.to_char(v_layout.epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
											 (EXTRACT(epoch FROM v_layout.tick) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8,
											 v_layout.node_bits, v_layout.sequence_bits, v_layout.id_bits),
				  HINT = 'Set snowid.epoch = ''2023-01-01 00:00:00+00'', and snowid.tick, snowid.node_bits, snowid.sequence_bits and snowid.id_bits to their defaults (1ms, 10, 12, 63), in postgresql.conf, and restart the server.';
	END IF;

	-- snowflake.node may differ per session (any superuser may SET it);
	-- what this session says is what its keys were made as.
	v_node := pg_catalog.current_setting('snowflake.node', true);
	IF v_node OPERATOR(pg_catalog.~) '^[0-9]{1,9}$' THEN
		v_node_id := v_node::pg_catalog.int4;
	END IF;
	IF v_node_id OPERATOR(pg_catalog.<>) 0
	   AND v_layout.node_id OPERATOR(pg_catalog.>=) 0
	   AND v_node_id OPERATOR(pg_catalog.<>) v_layout.node_id THEN
		RAISE EXCEPTION 'snowflake.node is %, but snowid''s node is %', v_node, v_layout.node_id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = pg_catalog.format('This session makes pgEdge snowflake keys as node %s, but snowid makes this server''s keys as node %s: they could equal keys made by the server whose snowflake.node is %s.',
											 v_node, v_layout.node_id, v_layout.node_id),
				  HINT = pg_catalog.format('Set snowid.node_id = %s in postgresql.conf and restart the server, or leave snowflake.node at this server''s value in this session.', v_node);
	END IF;
END
$$;

COMMENT ON FUNCTION snowid_convert_snowflake_check(regclass, name) IS
'conversion, internal: refuses (55000) to move a column of pgEdge snowflake keys to snowid_next() unless the extension snowflake is 2.x, snowid''s layout is its layout (epoch 2023-01-01 00:00:00+00, 1 ms, 10 node bits, 12 sequence bits, 63 bits) and snowflake.node, where set, is snowid''s node';

-- The next ID of this server, taken once the clock lies past p_top's tick
-- if p_top is a key of this layout no later than snowid.max_wait ahead of
-- the clock (keys of pgEdge snowflake may run ahead: it borrows the next
-- millisecond when its counter runs over, and INCREMENT moves its counter
-- by more than one); the caller checks that it lies above p_top.
CREATE FUNCTION snowid_convert_next_above(p_top numeric)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_next bigint;
	v_wait interval;
BEGIN
	FOR i IN 1 .. 10 LOOP
		-- (without the preload, this is the error that says so)
		v_next := @extschema@.snowid_next();
		IF p_top IS NULL OR v_next OPERATOR(pg_catalog.>) p_top THEN
			EXIT;
		END IF;
		v_wait := @extschema@.snowid_timestamp(p_top::pg_catalog.int8)
			OPERATOR(pg_catalog.+) (SELECT l.tick FROM @extschema@.snowid_layout() l)
			OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp();
		EXIT WHEN v_wait OPERATOR(pg_catalog.>)
			pg_catalog.current_setting('snowid.max_wait')::pg_catalog.interval;
		PERFORM pg_catalog.pg_sleep(GREATEST(EXTRACT(epoch FROM v_wait), 0.001));
	END LOOP;
	RETURN v_next;
END
$$;

COMMENT ON FUNCTION snowid_convert_next_above(numeric) IS
'conversion, internal: snowid_next(), taken after the clock has passed the tick of the given value where that is at most snowid.max_wait ahead (keys of pgEdge snowflake may run ahead of the clock)';

CREATE OR REPLACE FUNCTION snowid_convert_column(tab regclass,
									  col name,
									  drop_sequence boolean DEFAULT true,
									  ticket text DEFAULT NULL,
									  shard integer DEFAULT 0,
									  shards integer DEFAULT 1,
									  start bigint DEFAULT NULL,
									  block integer DEFAULT 1000)
RETURNS text
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
-- No row hidden from the checks: a policy that applies to the caller makes
-- them fail instead of filtering the values they compare.
SET row_security = off
AS $$
DECLARE
	v_rel record;
	v_att record;
	v_kind text;
	v_def text;				-- the column's default now, NULL if none
	v_def_oid oid;
	v_seq regclass;			-- the sequence the column takes its values from
	v_owned boolean := false;	-- v_seq is the column's identity or is owned by it
	v_seq_name text;
	v_seq_ext text;			-- the extension v_seq belongs to, quoted
	v_want text;			-- the default the column gets
	v_parts text[];
	v_ticket_name text;		-- the ticket sequence, schema-qualified and quoted
	v_ticket regclass;
	v_top numeric;			-- the largest value the column or its sequence holds
	v_next bigint;
	v_first numeric;
	v_max numeric;
	v_grantee oid;
	v_citus boolean := false;
BEGIN
	IF tab IS NULL OR col IS NULL OR drop_sequence IS NULL OR shard IS NULL
	   OR shards IS NULL OR block IS NULL THEN
		RAISE EXCEPTION 'snowid_convert_column needs a table, a column, drop_sequence, shard, shards and block'
			USING ERRCODE = 'null_value_not_allowed',
				  DETAIL = 'Only ticket and start may be NULL.';
	END IF;

	SELECT c.relkind, c.relowner, c.relispartition, n.nspname
	  INTO v_rel
	  FROM pg_catalog.pg_class c
	  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
	 WHERE c.oid OPERATOR(pg_catalog.=) tab::pg_catalog.oid;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'relation with OID % does not exist', tab::pg_catalog.oid
			USING ERRCODE = 'undefined_table';
	END IF;
	IF v_rel.relkind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '% is not a table', tab
			USING ERRCODE = 'wrong_object_type',
				  DETAIL = pg_catalog.format('It is a %s; only the column of a table can be converted.',
											 CASE v_rel.relkind
												WHEN 'v' THEN 'view'
												WHEN 'm' THEN 'materialized view'
												WHEN 'f' THEN 'foreign table'
												WHEN 'S' THEN 'sequence'
												WHEN 'i' THEN 'index'
												WHEN 'I' THEN 'partitioned index'
												WHEN 'c' THEN 'composite type'
												ELSE 'relation of kind ' OPERATOR(pg_catalog.||) v_rel.relkind::pg_catalog.text
											 END);
	END IF;
	-- As ALTER TABLE checks it, before the lock: a role that may not alter
	-- the table does not get to keep others from it.
	IF NOT pg_catalog.pg_has_role(pg_catalog.current_user(), v_rel.relowner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tab
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'Converting a column alters its table, which only the table''s owner (or a member of the owning role) may do.';
	END IF;

	-- Every insert waits from here on, and reads the new default when it
	-- gets the table; every check below sees the table as it will be
	-- converted.
	EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tab);

	SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated
	  INTO v_att
	  FROM pg_catalog.pg_attribute a
	 WHERE a.attrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND a.attname OPERATOR(pg_catalog.=) col
	   AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of relation % does not exist', col, tab
			USING ERRCODE = 'undefined_column';
	END IF;
	IF v_att.attnum OPERATOR(pg_catalog.<=) 0 THEN
		RAISE EXCEPTION 'cannot convert system column "%"', col
			USING ERRCODE = 'feature_not_supported';
	END IF;
	IF v_att.attgenerated OPERATOR(pg_catalog.<>) '' THEN
		RAISE EXCEPTION 'column "%" of table % is a generated column', col, tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Its values are computed from other columns; they cannot come from snowid.';
	END IF;

	-- Partitions and inheritance: each table of a hierarchy has a default of
	-- its own, and rows inserted through a parent take the parent's.
	IF v_rel.relkind OPERATOR(pg_catalog.=) 'p' AND EXISTS (
		SELECT FROM pg_catalog.pg_partitioned_table p
		 WHERE p.partrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
		   AND v_att.attnum OPERATOR(pg_catalog.=) ANY (p.partattrs::pg_catalog.int2[])) THEN
		RAISE EXCEPTION 'column "%" of table % is its partition key', col, tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'New values would decide which partition a row goes to, and the existing partitions are bounded by the old ones.',
				  HINT = 'Give the table a key that snowid may fill besides its partition key, or create a new partitioned table bounded by snowid ranges (snowid_from_timestamp) and move the rows.';
	END IF;
	IF v_rel.relkind OPERATOR(pg_catalog.=) 'p' OR EXISTS (
		SELECT FROM pg_catalog.pg_inherits i
		 WHERE i.inhrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			OR i.inhparent OPERATOR(pg_catalog.=) tab::pg_catalog.oid) THEN
		RAISE EXCEPTION 'table % is part of a partitioned table or an inheritance hierarchy', tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Each table of a hierarchy has a default of its own, and rows inserted through a parent take the parent''s, so one column cannot be converted alone.',
				  HINT = 'Set the defaults of the hierarchy by hand (ALTER TABLE ... ALTER COLUMN ... SET DEFAULT), after checking that the unique indexes cover every table.';
	END IF;

	-- Citus copies a default to the shards and workers, and a distributed
	-- table's unique index includes its distribution column: convert the
	-- column before the table is distributed.
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
		EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
								 WHERE p.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1)'
		   INTO v_citus USING tab::pg_catalog.oid;
	END IF;
	IF v_citus THEN
		RAISE EXCEPTION 'table % is a Citus table', tab
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Its default is copied to its shards on the workers, where the check of the existing values and the change of the default would not run under one lock.',
				  HINT = 'Convert the column before create_distributed_table or create_reference_table, then distribute the table.';
	END IF;

	IF ticket IS NULL AND v_att.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
		RAISE EXCEPTION 'column "%" of table % is of type %, not bigint', col, tab,
			v_att.atttypid::pg_catalog.regtype
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = 'snowid_next() returns IDs of 63 bits, which only a bigint column can hold.',
				  HINT = CASE WHEN v_att.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int4'::pg_catalog.regtype
						 THEN 'Pass ticket => ''name'' to give it a ticket sequence of type integer, or change its type to bigint first.'
						 ELSE 'Change its type to bigint first (ALTER TABLE ... ALTER COLUMN ... TYPE bigint).' END;
	END IF;
	IF ticket IS NOT NULL AND v_att.atttypid NOT IN ('pg_catalog.int4'::pg_catalog.regtype,
												   'pg_catalog.int8'::pg_catalog.regtype) THEN
		RAISE EXCEPTION 'column "%" of table % is of type %, not integer or bigint', col, tab,
			v_att.atttypid::pg_catalog.regtype
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = 'A ticket sequence issues values of type integer or bigint.',
				  HINT = 'Change its type to integer or bigint first (ALTER TABLE ... ALTER COLUMN ... TYPE integer).';
	END IF;

	IF NOT EXISTS (
		SELECT FROM pg_catalog.pg_index i
		 WHERE i.indrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
		   AND i.indisunique AND i.indisvalid
		   AND i.indnkeyatts OPERATOR(pg_catalog.=) 1
		   AND i.indkey[0] OPERATOR(pg_catalog.=) v_att.attnum
		   AND i.indpred IS NULL) THEN
		RAISE EXCEPTION 'column "%" of table % has no unique index', col, tab
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Only a primary key or a unique constraint on the column alone refuses a value that a row already holds.',
				  HINT = pg_catalog.format('Add one first: ALTER TABLE %s ADD PRIMARY KEY (%I).', tab, col);
	END IF;

	-- A column that refers to another table takes its values from there:
	-- new keys of this server would name rows that do not exist.
	IF EXISTS (
		SELECT FROM pg_catalog.pg_constraint c
		 WHERE c.conrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
		   AND c.contype OPERATOR(pg_catalog.=) 'f'
		   AND v_att.attnum OPERATOR(pg_catalog.=) ANY (c.conkey)) THEN
		RAISE EXCEPTION 'column "%" of table % refers to another table', col, tab
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'A foreign key on the column takes its values from the table it references; a generated key would name no row there.',
				  HINT = 'Convert the key of the referenced table instead.';
	END IF;

	-- Where the values come from now.
	IF ticket IS NOT NULL THEN
		v_parts := pg_catalog.parse_ident(ticket);
		IF pg_catalog.cardinality(v_parts) OPERATOR(pg_catalog.=) 1 THEN
			v_ticket_name := pg_catalog.format('%I.%I', v_rel.nspname, v_parts[1]);
		ELSIF pg_catalog.cardinality(v_parts) OPERATOR(pg_catalog.=) 2 THEN
			v_ticket_name := pg_catalog.format('%I.%I', v_parts[1], v_parts[2]);
		ELSE
			RAISE EXCEPTION 'invalid ticket sequence name "%"', ticket
				USING ERRCODE = 'invalid_name',
					  DETAIL = 'A ticket sequence is named by a name or a schema and a name.';
		END IF;
		v_ticket := pg_catalog.to_regclass(v_ticket_name);
		IF v_ticket IS NOT NULL THEN
			v_want := pg_catalog.format('%I.snowid_ticket_next(%L::regclass)', '@extschema@', v_ticket);
		END IF;
	ELSE
		v_want := pg_catalog.format('%I.snowid_next()', '@extschema@');
	END IF;

	SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid), d.oid
	  INTO v_def, v_def_oid
	  FROM pg_catalog.pg_attrdef d
	 WHERE d.adrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND d.adnum OPERATOR(pg_catalog.=) v_att.attnum;

	-- The identity's sequence, or the one a serial column owns.
	SELECT s.oid::pg_catalog.regclass
	  INTO v_seq
	  FROM pg_catalog.pg_depend k
	  JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) k.objid
	 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND k.refobjid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND k.refobjsubid OPERATOR(pg_catalog.=) v_att.attnum
	   AND k.deptype IN ('a', 'i')
	   AND s.relkind OPERATOR(pg_catalog.=) 'S'
	 LIMIT 1;
	v_owned := v_seq IS NOT NULL;

	IF v_att.attidentity OPERATOR(pg_catalog.<>) '' THEN
		v_kind := 'identity';
	ELSIF v_want IS NOT NULL AND v_def OPERATOR(pg_catalog.=) v_want THEN
		IF v_owned THEN
			RAISE NOTICE 'column "%" of table % already takes its values from %', col, tab, v_want
				USING DETAIL = pg_catalog.format('Nothing was changed; the column still owns sequence %s, which it no longer takes values from.', v_seq),
					  HINT = pg_catalog.format('DROP SEQUENCE %s drops it.', v_seq);
		ELSE
			RAISE NOTICE 'column "%" of table % already takes its values from %', col, tab, v_want
				USING DETAIL = 'Nothing was changed.';
		END IF;
		RETURN v_def;
	ELSIF v_def IS NULL THEN
		v_kind := 'none';
	ELSE
		-- A default is converted only if it is nextval() of a sequence,
		-- written as serial writes it: nextval('name'::regclass).
		SELECT s.oid::pg_catalog.regclass
		  INTO v_seq
		  FROM pg_catalog.pg_depend k
		  JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) k.refobjid
		 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
		   AND k.objid OPERATOR(pg_catalog.=) v_def_oid
		   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND s.relkind OPERATOR(pg_catalog.=) 'S';
		IF FOUND
		   AND v_def OPERATOR(pg_catalog.=) pg_catalog.format('nextval(%L::regclass)', v_seq) THEN
			v_kind := 'sequence';
		ELSE
			-- or pgEdge snowflake's nextval() of a sequence
			v_seq := @extschema@.snowid_convert_snowflake_seq(v_def_oid, v_def);
			IF v_seq IS NULL THEN
				RAISE EXCEPTION 'column "%" of table % has a default that is not a sequence''s nextval()', col, tab
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = pg_catalog.format('Its default is %s.', v_def),
						  HINT = 'Only a column of type serial, bigserial or identity, one whose default is pgEdge snowflake''s snowflake.nextval(), or one without a default, can be converted.';
			END IF;
			v_kind := 'snowflake';
			IF ticket IS NULL THEN
				PERFORM @extschema@.snowid_convert_snowflake_check(tab, col);
			END IF;
		END IF;
		v_owned := EXISTS (
			SELECT FROM pg_catalog.pg_depend k
			 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND k.objid OPERATOR(pg_catalog.=) v_seq::pg_catalog.oid
			   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND k.refobjid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			   AND k.refobjsubid OPERATOR(pg_catalog.=) v_att.attnum
			   AND k.deptype OPERATOR(pg_catalog.=) 'a');
	END IF;

	-- The sequence goes with an identity (and with drop_sequence): nothing
	-- else may take its values from it.
	IF v_seq IS NOT NULL AND (v_kind OPERATOR(pg_catalog.=) 'identity' OR (drop_sequence AND v_owned))
	   AND EXISTS (
		SELECT FROM pg_catalog.pg_depend k
		 WHERE k.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
		   AND k.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND k.refobjid OPERATOR(pg_catalog.=) v_seq::pg_catalog.oid
		   AND k.objid IS DISTINCT FROM v_def_oid) THEN
		RAISE EXCEPTION 'sequence % of column "%" of table % is the default of other columns too', v_seq, col, tab
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = CASE WHEN v_kind OPERATOR(pg_catalog.=) 'identity'
						 THEN 'An identity''s sequence is dropped with the identity, and other columns still take their values from it.'
						 ELSE 'drop_sequence would drop it, and other columns still take their values from it.' END,
				  HINT = CASE WHEN v_kind OPERATOR(pg_catalog.=) 'identity'
						 THEN 'Give the other columns a sequence of their own first.'
						 ELSE 'Pass drop_sequence => false to keep it.' END;
	END IF;

	-- Above every value the column holds, and every value its sequence
	-- handed out (a row may have been deleted, or its value kept elsewhere).
	EXECUTE pg_catalog.format('SELECT pg_catalog.max(%I)::pg_catalog.numeric FROM %s', col, tab)
	   INTO v_top;
	IF v_seq IS NOT NULL THEN
		v_top := greatest(v_top, pg_catalog.pg_sequence_last_value(v_seq));
	END IF;

	IF ticket IS NULL THEN
		-- IDs of this server only go up: every one after this lies above it.
		v_next := @extschema@.snowid_convert_next_above(v_top);
		IF v_top OPERATOR(pg_catalog.>=) v_next THEN
			RAISE EXCEPTION 'column "%" of table % holds values that this server''s IDs do not exceed', col, tab
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = pg_catalog.format('Its largest value (or its sequence''s last value) is %s; the next ID of this server is %s.', v_top, v_next),
					  HINT = CASE WHEN v_kind OPERATOR(pg_catalog.=) 'snowflake'
						 THEN pg_catalog.format('Its keys run ahead of the clock: call it again after %s, or raise snowid.max_wait.',
												@extschema@.snowid_timestamp(v_top::pg_catalog.int8))
						 ELSE 'Give it a ticket sequence that starts above its values (ticket => ''name'') instead.' END;
		END IF;
	ELSE
		IF v_ticket IS NOT NULL THEN
			RAISE EXCEPTION 'relation % already exists', v_ticket
				USING ERRCODE = 'duplicate_table',
					  DETAIL = pg_catalog.format('Column "%s" of table %s does not take its values from it.', col, tab),
					  HINT = 'Name a new ticket sequence: it is created to start above the column''s values.';
		END IF;
		v_max := CASE WHEN v_att.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int4'::pg_catalog.regtype
					  THEN 2147483647 ELSE 9223372036854775807 END;
		-- Each server sees only its own rows: a start above its own values
		-- would overlap the stripes of the others.
		IF start IS NULL AND shards OPERATOR(pg_catalog.>) 1 THEN
			RAISE EXCEPTION 'snowid_convert_column with shards => % needs start', shards
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('This server''s largest value (or its sequence''s last value) is %s; the other shards'' values are not known here, and a start above this server''s values alone would make stripes that overlap those of the others.', coalesce(v_top::pg_catalog.text, 'none')),
					  HINT = 'Take the largest value over all shards, pick a start above it, and pass the same start on every server.';
		END IF;
		IF start IS NOT NULL AND start OPERATOR(pg_catalog.<=) v_top THEN
			RAISE EXCEPTION 'start % is not above the values of column "%" of table %', start, col, tab
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('Its largest value (or its sequence''s last value) is %s.', v_top),
					  HINT = 'Leave start out to start just above them.';
		END IF;
		v_first := coalesce(start, greatest(coalesce(v_top, 0) OPERATOR(pg_catalog.+) 1, 1));
		IF start IS NULL AND v_first OPERATOR(pg_catalog.+) shard OPERATOR(pg_catalog.>) v_max THEN
			RAISE EXCEPTION 'column "%" of table % has no % values left above its values', col, tab,
				v_att.atttypid::pg_catalog.regtype
				USING ERRCODE = 'numeric_value_out_of_range',
					  DETAIL = pg_catalog.format('Its largest value (or its sequence''s last value) is %s, the largest of its type.', v_top),
					  HINT = 'Change the column''s type to bigint first.';
		END IF;
		v_ticket := @extschema@.snowid_ticket_create(v_ticket_name, shard, shards, block,
													 v_first::bigint, v_att.atttypid::pg_catalog.regtype);
		-- The table's owner owns it, and whoever may insert into the table
		-- may take its values, as an identity column needs no privilege on
		-- its sequence.
		IF v_rel.relowner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r
												   WHERE r.rolname OPERATOR(pg_catalog.=) pg_catalog.current_user()) THEN
			EXECUTE pg_catalog.format('ALTER SEQUENCE %s OWNER TO %I', v_ticket,
									  pg_catalog.pg_get_userbyid(v_rel.relowner));
		END IF;
		FOR v_grantee IN
			SELECT a.grantee
			  FROM pg_catalog.pg_class c,
				   LATERAL pg_catalog.aclexplode(c.relacl) a
			 WHERE c.oid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			   AND a.privilege_type OPERATOR(pg_catalog.=) 'INSERT'
			UNION
			SELECT a.grantee
			  FROM pg_catalog.pg_attribute t,
				   LATERAL pg_catalog.aclexplode(t.attacl) a
			 WHERE t.attrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
			   AND a.privilege_type OPERATOR(pg_catalog.=) 'INSERT'
		LOOP
			CONTINUE WHEN v_grantee OPERATOR(pg_catalog.=) v_rel.relowner;
			EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO %s', v_ticket,
									  CASE WHEN v_grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
									  ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grantee)) END);
		END LOOP;
		v_want := pg_catalog.format('%I.snowid_ticket_next(%L::regclass)', '@extschema@', v_ticket);
	END IF;

	IF v_kind OPERATOR(pg_catalog.=) 'identity' THEN
		-- Its sequence is part of the identity and goes with it.
		v_seq_name := v_seq::pg_catalog.text;
		EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tab, col);
		RAISE NOTICE 'sequence % of the identity is dropped with it', v_seq_name
			USING DETAIL = 'currval() and lastval() of that sequence now fail in every session instead of returning an old key; read new keys with INSERT ... RETURNING.';
	END IF;
	EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tab, col, v_want);
	IF v_kind OPERATOR(pg_catalog.<>) 'identity' AND v_seq IS NOT NULL THEN
		-- pgEdge snowflake's own sequence goes with its extension.
		SELECT pg_catalog.quote_ident(x.extname) INTO v_seq_ext
		  FROM pg_catalog.pg_depend e
		  JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) e.refobjid
		 WHERE e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND e.objid OPERATOR(pg_catalog.=) v_seq::pg_catalog.oid
		   AND e.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		   AND e.deptype OPERATOR(pg_catalog.=) 'e';
		IF drop_sequence AND v_owned THEN
			EXECUTE pg_catalog.format('DROP SEQUENCE %s', v_seq);
		ELSE
			RAISE NOTICE 'sequence % is kept', v_seq
				USING DETAIL = CASE WHEN v_seq_ext IS NOT NULL
						THEN pg_catalog.format('The column no longer takes its values from it; it belongs to extension %s, and other columns may still take their keys from it, so drop_sequence does not drop it.', v_seq_ext)
					WHEN EXISTS (
						SELECT FROM pg_catalog.pg_depend e
						 WHERE e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
						   AND e.objid OPERATOR(pg_catalog.=) v_seq::pg_catalog.oid
						   AND e.refobjid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
						   AND e.refobjsubid OPERATOR(pg_catalog.=) v_att.attnum
						   AND e.deptype OPERATOR(pg_catalog.=) 'i')
						THEN 'The column no longer takes its values from it; it is the sequence of an identity the column had (pgEdge''s convert_sequence_to_snowflake() leaves it so), which goes only with the column or the table.'
					WHEN NOT v_owned
						THEN 'The column no longer takes its values from it; it belongs to no column of this table, so drop_sequence does not drop it. A session that called nextval() on it before still reads that old value from currval() and lastval().'
						ELSE 'The column no longer takes its values from it; it stays owned by the column and goes with the table. A session that called nextval() on it before still reads that old value from currval() and lastval().' END,
					  HINT = CASE WHEN v_seq_ext IS NOT NULL
						THEN pg_catalog.format('Read new keys with INSERT ... RETURNING; DROP EXTENSION %s drops it once no column''s default calls it.', v_seq_ext)
						ELSE 'Read new keys with INSERT ... RETURNING, and drop the sequence (DROP SEQUENCE) once nothing reads it.' END;
		END IF;
	END IF;

	SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid)
	  INTO v_def
	  FROM pg_catalog.pg_attrdef d
	 WHERE d.adrelid OPERATOR(pg_catalog.=) tab::pg_catalog.oid
	   AND d.adnum OPERATOR(pg_catalog.=) v_att.attnum;
	RETURN v_def;
END
$$;

COMMENT ON FUNCTION snowid_convert_column(regclass, name, boolean, text, integer, integer, bigint, integer) IS
'moves a serial, bigserial or identity column (or one without a default, or one whose default is pgEdge snowflake''s nextval() once snowid''s layout and node are snowflake''s) with a unique index to DEFAULT snowid_next() (bigint), or to a new ticket sequence above its values (ticket => name), under an ACCESS EXCLUSIVE lock; drop_sequence (true unless given) drops a serial''s sequence; with shards > 1, start is required, the same on every server and above the values of all; a column already converted is left as it is';

-- ---- end of i32 pgEdge snowflake ----

-- ---- i29 layout held open: a claim that finds the registry's layout being
-- set by a transaction left open ends that session after 1 s and tries
-- again (snowid_registry_claim_settings replaced) ----

-- Step 1: the settings; the layout: the first claim sets it, every other
-- must match.  A claim that finds the layout being set by a transaction
-- left open (a member's first claim, then no COMMIT) ends that member's
-- session once its transaction is 1 s old (snowid_registry_unblock), as a
-- pool's grant does, and tries once more: no member keeps the others out.
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

-- ---- end of i29 layout held open ----

-- ---- i31 logical replication: a change of snowid's tables that arrives
-- by replication is skipped with a WARNING, and a publication that carries
-- them is warned about (two new functions, their triggers and an event
-- trigger) ----

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

-- ---- end of i31 logical replication ----
