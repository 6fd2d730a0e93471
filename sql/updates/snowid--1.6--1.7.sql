/* snowid--1.6--1.7.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.7'" to load this file. \quit

-- 1.7: ready to adopt (issue 24) and IDs beside uuidv7() (issue 25).

-- Snowids as RFC 9562 version 7 UUIDs (1.7): the time field is the ID's
-- time, the 74 bits left to the generator hold the ID itself.  Converting
-- reads the layout, so STABLE, as the decoders are.

CREATE FUNCTION snowid_to_uuid(id bigint)
RETURNS uuid
AS 'MODULE_PATHNAME', 'snowid_to_uuid'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_to_uuid(bigint) IS
'version 7 UUID of a Snowflake ID: the ID''s time in its Unix millisecond field, the ID itself in the other bits, so UUIDs sort as their IDs do';

CREATE FUNCTION snowid_from_uuid(id uuid)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_from_uuid'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_from_uuid(uuid) IS
'Snowflake ID a snowid_to_uuid() UUID holds; a UUID that snowid_to_uuid() under the layout in force would not make is an error (22023)';

CREATE FUNCTION snowid_next_uuid()
RETURNS uuid
AS 'MODULE_PATHNAME', 'snowid_next_uuid'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowid_next_uuid() IS
'next Snowflake ID of this server as a version 7 UUID: snowid_to_uuid(snowid_next())';

-- The ID span of an interval, for partitions by the time inside the ID
-- (issue 25).
CREATE FUNCTION snowid_interval(span interval)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowid_interval'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowid_interval(interval) IS
'ID span of a fixed-length interval under the layout in force: how much an ID grows while that much time passes (its ticks times 2^(node_bits + sequence_bits)); a day counts as 24 hours; for ID ranges such as partition bounds';

-- Moving an existing table to snowid (issue 24): the column of a serial,
-- bigserial or identity column, or one without a default, takes its values
-- from snowid_next() (a bigint column) or from a new ticket sequence that
-- starts above its values (ticket => name; integer or bigint).  Under an
-- ACCESS EXCLUSIVE lock taken before anything is read, so that inserts wait
-- for the conversion and then take the new default, and no value is read
-- before a row that could exceed it is written; one transaction, undone by
-- ROLLBACK.  A column already converted as asked is left as it is, with a
-- NOTICE.  Whoever may ALTER the table may convert it (the owner, a member
-- of the owning role, a superuser), so EXECUTE stays with PUBLIC, as
-- ALTER TABLE does.  The search_path is pinned and every name is quoted or
-- a regclass, so nothing on the caller's path is called.
CREATE FUNCTION snowid_convert_column(tab regclass,
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
		IF NOT FOUND
		   OR v_def OPERATOR(pg_catalog.<>) pg_catalog.format('nextval(%L::regclass)', v_seq) THEN
			RAISE EXCEPTION 'column "%" of table % has a default that is not a sequence''s nextval()', col, tab
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = pg_catalog.format('Its default is %s.', v_def),
					  HINT = 'Only a column of type serial, bigserial or identity, or one without a default, can be converted.';
		END IF;
		v_kind := 'sequence';
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
		v_next := @extschema@.snowid_next();
		IF v_top OPERATOR(pg_catalog.>=) v_next THEN
			RAISE EXCEPTION 'column "%" of table % holds values that this server''s IDs do not exceed', col, tab
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = pg_catalog.format('Its largest value (or its sequence''s last value) is %s; the next ID of this server is %s.', v_top, v_next),
					  HINT = 'Give it a ticket sequence that starts above its values (ticket => ''name'') instead.';
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
		IF drop_sequence AND v_owned THEN
			EXECUTE pg_catalog.format('DROP SEQUENCE %s', v_seq);
		ELSE
			RAISE NOTICE 'sequence % is kept', v_seq
				USING DETAIL = CASE WHEN NOT v_owned
						THEN 'The column no longer takes its values from it; it belongs to no column of this table, so drop_sequence does not drop it. A session that called nextval() on it before still reads that old value from currval() and lastval().'
						ELSE 'The column no longer takes its values from it; it stays owned by the column and goes with the table. A session that called nextval() on it before still reads that old value from currval() and lastval().' END,
					  HINT = 'Read new keys with INSERT ... RETURNING, and drop the sequence (DROP SEQUENCE) once nothing reads it.';
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
'moves a serial, bigserial or identity column (or one without a default) with a unique index to DEFAULT snowid_next() (bigint), or to a new ticket sequence above its values (ticket => name), under an ACCESS EXCLUSIVE lock; drop_sequence (true unless given) drops a serial''s sequence; a column already converted is left as it is';
