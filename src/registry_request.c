/*-------------------------------------------------------------------------
 *
 * registry_request.c
 *	  snowid_registry_request(jsonb): a member's call on the registry as one
 *	  typed request, versioned, with named fields (2.1 on).
 *
 * A request is a JSON object:
 *
 *	  {"version": 1, "op": "claim", "node_id": 3, "auto": false, ...}
 *
 * "version" is the protocol version the member speaks (this registry speaks
 * SNOWID_REQUEST_VERSION), "op" one of the operations of ops[] below, and
 * every other key a field of that operation: the name of a parameter of the
 * operation's positional function (snowid_registry_claim, ...), read from
 * pg_proc.proargnames, without its "p_".  Every field is required (JSON
 * null passes SQL NULL, as a positional call may), and each must have the
 * JSON type of its parameter: a number for integers and numerics (integers
 * whole and in range), a boolean for booleans, an array of such values
 * (none null) for arrays, a string for anything else, read by the type's
 * input function.  An unknown operation or field, a missing field, a wrong
 * JSON type or a version this registry does not speak is an error naming
 * what is wrong, before anything is called.
 *
 * The request is then the positional call, made here through SPI as the
 * caller: so members need EXECUTE on that function exactly as before (the
 * request function itself is PUBLIC and adds no right), and the call goes
 * through snowid_registry_forward (registry_server.c) to the registry's
 * server process and <name>_serve, with the caller's session role taken
 * from the session as for a positional call: no field names a role.
 *
 * The answer: {"version": 1, "rows": [{column: value, ...}, ...]}, the
 * positional function's rows by column name (a function returning one
 * value: one column, "value").  Errors of the call keep their SQLSTATE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/syscache.h"

/* the protocol version this registry speaks */
#define SNOWID_REQUEST_VERSION 1

/* an operation: its name in requests and its positional function */
typedef struct RequestOp
{
	const char *op;
	const char *function;
	Oid			fnoid;			/* the function the plan calls */
	char	   *nspname;		/* the schema the plan names */
	int			nargs;
	Oid			argtypes[FUNC_MAX_ARGS];
	char	   *fields[FUNC_MAX_ARGS];	/* parameter names without "p_" */
	SPIPlanPtr	plan;
} RequestOp;

static RequestOp ops[] = {
	{.op = "claim", .function = "snowid_registry_claim"},
	{.op = "reassert", .function = "snowid_registry_reassert"},
	{.op = "release", .function = "snowid_registry_release"},
	{.op = "pool_grant", .function = "snowid_pool_grant"},
	{.op = "pool_report", .function = "snowid_pool_report"},
	{.op = "pool_return", .function = "snowid_pool_return"},
};

#define NOPS ((int) lengthof(ops))

static const char *
op_names(void)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	for (i = 0; i < NOPS; i++)
		appendStringInfo(&s, "%s%s", i ? ", " : "", ops[i].op);
	return s.data;
}

static const char *
op_fields(const RequestOp *op)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	for (i = 0; i < op->nargs; i++)
		appendStringInfo(&s, "%s%s", i ? ", " : "", op->fields[i]);
	return s.data;
}

static const char *
json_type_name(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "a string";
		case jbvNumeric:
			return "a number";
		case jbvBool:
			return "a boolean";
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? "an array" : "an object";
		default:
			return "an array or object";
	}
}

/*
 * The operation's positional function in the schema of the calling
 * function (the extension's own, checked), its parameters and a plan of
 * the call, kept while the function and its schema stay the same.
 */
static void
op_prepare(RequestOp *op, Oid self)
{
	Oid			nsp = get_func_namespace(self);
	char	   *nspname = get_namespace_name(nsp);
	Oid			ext = get_extension_oid("snowid", false);
	Oid			fnoid = InvalidOid;
	CatCList   *list;
	HeapTuple	tup;
	Form_pg_proc proc;
	char	  **names;
	Datum		argnames;
	Datum		argmodes;
	bool		isnull;
	bool		scalar;
	int			n;
	int			i;
	StringInfoData q;
	SPIPlanPtr	plan;

	list = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(op->function));
	for (i = 0; i < list->n_members; i++)
	{
		Form_pg_proc p = (Form_pg_proc) GETSTRUCT(&list->members[i]->tuple);

		if (p->pronamespace == nsp)
			fnoid = p->oid;
	}
	ReleaseSysCacheList(list);
	if (!OidIsValid(fnoid) ||
		getExtensionOfObject(ProcedureRelationId, fnoid) != ext ||
		getExtensionOfObject(ProcedureRelationId, self) != ext)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("the registry has no function %s of snowid's for operation \"%s\"",
						op->function, op->op),
				 errhint("Run ALTER EXTENSION snowid UPDATE in the registry database.")));

	if (op->plan != NULL && op->fnoid == fnoid && op->nspname != NULL &&
		strcmp(op->nspname, nspname) == 0)
		return;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "snowid: cache lookup failed for function %u", fnoid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	argnames = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proargnames, &isnull);
	if (isnull)
		elog(ERROR, "snowid: function %s has no parameter names", op->function);
	argmodes = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proargmodes, &isnull);
	n = get_func_input_arg_names(argnames, isnull ? PointerGetDatum(NULL) : argmodes,
								 &names);
	if (n != proc->pronargs)
		elog(ERROR, "snowid: function %s has unnamed parameters", op->function);
	scalar = !proc->proretset && get_typtype(proc->prorettype) != TYPTYPE_COMPOSITE &&
		proc->prorettype != RECORDOID;

	if (op->plan != NULL)
	{
		SPI_freeplan(op->plan);
		op->plan = NULL;
	}
	for (i = 0; i < op->nargs; i++)
		pfree(op->fields[i]);
	op->nargs = n;
	memcpy(op->argtypes, proc->proargtypes.values, sizeof(Oid) * n);
	for (i = 0; i < n; i++)
		op->fields[i] = MemoryContextStrdup(TopMemoryContext,
											strncmp(names[i], "p_", 2) == 0 ?
											names[i] + 2 : names[i]);
	ReleaseSysCache(tup);

	initStringInfo(&q);
	appendStringInfo(&q,
					 "SELECT pg_catalog.jsonb_build_object('version', %d, 'rows', "
					 "COALESCE(pg_catalog.jsonb_agg(%s), "
					 "'[]'::pg_catalog.jsonb)) FROM %s.%s(",
					 SNOWID_REQUEST_VERSION,
					 scalar ? "pg_catalog.jsonb_build_object('value', r.value)" :
					 "pg_catalog.to_jsonb(r)",
					 quote_identifier(nspname),
					 quote_identifier(op->function));
	for (i = 0; i < n; i++)
		appendStringInfo(&q, "%s$%d", i ? ", " : "", i + 1);
	appendStringInfo(&q, ") AS r%s", scalar ? "(value)" : "");
	plan = SPI_prepare(q.data, n, op->argtypes);
	if (plan == NULL)
		elog(ERROR, "snowid: registry request could not be planned: %s",
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "snowid: registry request plan could not be kept");
	op->plan = plan;
	op->fnoid = fnoid;
	if (op->nspname != NULL)
		pfree(op->nspname);
	op->nspname = MemoryContextStrdup(TopMemoryContext, nspname);
}

/* A field of the wrong JSON type: an error saying which and what it needs. */
static void
wrong_type(const RequestOp *op, const char *field, const JsonbValue *v,
		   const char *need)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("field \"%s\" of a registry request must be %s", field, need),
			 errdetail("Operation \"%s\" got %s for \"%s\".", op->op,
					   json_type_name(v), field)));
}

static int
got_detail(const char *opname, const char *text, const char *field)
{
	if (opname == NULL)
		return errdetail("The request has %s for \"%s\".", text, field);
	return errdetail("Operation \"%s\" got %s for \"%s\".", opname, text, field);
}

/* An integer of type typid from a JSON number, whole and in range. */
static Datum
integer_value(const char *opname, const char *field, Oid typid, Numeric num)
{
	char	   *text = DatumGetCString(DirectFunctionCall1(numeric_out,
														   NumericGetDatum(num)));
	char	   *dot = strchr(text, '.');
	char	   *end;
	int64		v;
	int64		lo = typid == INT2OID ? PG_INT16_MIN : typid == INT4OID ? PG_INT32_MIN : PG_INT64_MIN;
	int64		hi = typid == INT2OID ? PG_INT16_MAX : typid == INT4OID ? PG_INT32_MAX : PG_INT64_MAX;

	/*
	 * A whole number written with a fraction of zeros (2.0, 20e-1) is the
	 * same JSON number as 2: numeric_out keeps the scale it was written
	 * with, never an exponent.
	 */
	if (dot != NULL && dot[1 + strspn(dot + 1, "0")] == '\0')
		*dot = '\0';
	errno = 0;
	v = strtoi64(text, &end, 10);
	if (*end != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" of a registry request must be a whole number", field),
				 got_detail(opname, text, field)));
	if (errno == ERANGE || v < lo || v > hi)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("field \"%s\" of a registry request is out of range for type %s",
						field, format_type_be(typid)),
				 got_detail(opname, text, field)));
	switch (typid)
	{
		case INT2OID:
			return Int16GetDatum((int16) v);
		case INT4OID:
			return Int32GetDatum((int32) v);
		default:
			return Int64GetDatum(v);
	}
}

/* One scalar of type typid from a JSON value of the type it needs. */
static Datum
scalar_value(const RequestOp *op, const char *field, Oid typid,
			 const JsonbValue *v)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			if (v->type != jbvNumeric)
				wrong_type(op, field, v, "a number");
			return integer_value(op->op, field, typid, v->val.numeric);
		case NUMERICOID:
			if (v->type != jbvNumeric)
				wrong_type(op, field, v, "a number");
			return NumericGetDatum(v->val.numeric);
		case BOOLOID:
			if (v->type != jbvBool)
				wrong_type(op, field, v, "a boolean");
			return BoolGetDatum(v->val.boolean);
		default:
			{
				Oid			in;
				Oid			ioparam;

				if (v->type != jbvString)
					wrong_type(op, field, v, "a string");
				getTypeInputInfo(typid, &in, &ioparam);
				return OidInputFunctionCall(in, pnstrdup(v->val.string.val,
														 v->val.string.len),
											ioparam, -1);
			}
	}
}

/* errors while a field is read name it */
static void
field_context(void *arg)
{
	errcontext("field \"%s\" of a registry request", (const char *) arg);
}

/* A parameter's value from its field (not null). */
static Datum
field_value(const RequestOp *op, const char *field, Oid typid,
			const JsonbValue *v)
{
	Oid			elem = get_element_type(typid);
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;
	ArrayBuildState *acc;

	if (!OidIsValid(elem))
		return scalar_value(op, field, typid, v);
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		wrong_type(op, field, v, "an array");
	acc = initArrayResult(elem, CurrentMemoryContext, false);
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		if (e.type == jbvNull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("field \"%s\" of a registry request holds a null", field),
					 errdetail("Operation \"%s\" takes no null inside an array.", op->op)));
		acc = accumArrayResult(acc, scalar_value(op, field, elem, &e), false,
							   elem, CurrentMemoryContext);
	}
	return makeArrayResult(acc, CurrentMemoryContext);
}

/*
 * Make the positional call; an error of it reaches the caller as a
 * positional call's would, without the context line of this internal
 * statement.
 */
static void
run_call(SPIPlanPtr plan, Datum *values, const char *nulls)
{
	MemoryContext ctx = CurrentMemoryContext;

	PG_TRY();
	{
		if (SPI_execute_plan(plan, values, nulls, false, 1) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "snowid: registry request did not run");
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(ctx);
		ed = CopyErrorData();
		FlushErrorState();
		ed->context = NULL;
		ReThrowError(ed);
	}
	PG_END_TRY();
}

PG_FUNCTION_INFO_V1(snowid_registry_request);

Datum
snowid_registry_request(PG_FUNCTION_ARGS)
{
	Jsonb	   *req;
	JsonbValue *v;
	JsonbValue	key;
	JsonbValue	val;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	RequestOp  *op = NULL;
	char	   *opname;
	int64		version;
	Datum		values[FUNC_MAX_ARGS];
	char		nulls[FUNC_MAX_ARGS];
	bool		seen[FUNC_MAX_ARGS] = {false};
	Datum		answer;
	bool		isnull;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a registry request must not be null")));
	req = PG_GETARG_JSONB_P(0);
	if (!JB_ROOT_IS_OBJECT(req))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a registry request must be a JSON object"),
				 errhint("Send {\"version\": %d, \"op\": ..., and the operation's fields}.",
						 SNOWID_REQUEST_VERSION)));

	/* the version first: a newer protocol may mean anything else */
	v = getKeyJsonValueFromContainer(&req->root, "version", 7, NULL);
	if (v == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a registry request must have field \"version\""),
				 errdetail("The protocol version the request is written in is missing."),
				 errhint("This registry speaks version %d.", SNOWID_REQUEST_VERSION)));
	if (v->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"version\" of a registry request must be a number"),
				 errdetail("The request has %s for \"version\".", json_type_name(v))));
	version = DatumGetInt64(integer_value(NULL, "version",
										  INT8OID, v->val.numeric));
	if (version > SNOWID_REQUEST_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("this registry does not speak version " INT64_FORMAT " of snowid's registry requests",
						version),
				 errdetail("It speaks version %d (snowid %s).", SNOWID_REQUEST_VERSION,
						   SNOWID_LIBRARY_VERSION),
				 errhint("Update the registry to the snowid of the member first (a registry before its members), or send version %d.",
						 SNOWID_REQUEST_VERSION)));
	if (version < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("version " INT64_FORMAT " of snowid's registry requests does not exist",
						version),
				 errhint("This registry speaks version %d.", SNOWID_REQUEST_VERSION)));

	/* the operation */
	v = getKeyJsonValueFromContainer(&req->root, "op", 2, NULL);
	if (v == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a registry request must have field \"op\""),
				 errhint("The operations are %s.", op_names())));
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"op\" of a registry request must be a string"),
				 errdetail("The request has %s for \"op\".", json_type_name(v))));
	opname = pnstrdup(v->val.string.val, v->val.string.len);
	for (i = 0; i < NOPS; i++)
		if (strcmp(ops[i].op, opname) == 0)
			op = &ops[i];
	if (op == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a registry request names an unknown operation \"%s\"", opname),
				 errdetail("The operations of version %d are %s.",
						   SNOWID_REQUEST_VERSION, op_names()),
				 errhint("A member newer than its registry may need the registry updated first.")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "snowid: SPI_connect failed");
	op_prepare(op, fcinfo->flinfo->fn_oid);

	/* every field: known, once, of its type */
	it = JsonbIteratorInit(&req->root);
	while ((tok = JsonbIteratorNext(&it, &key, true)) != WJB_DONE)
	{
		char	   *field;

		if (tok != WJB_KEY)
			continue;
		tok = JsonbIteratorNext(&it, &val, true);
		Assert(tok == WJB_VALUE);
		field = pnstrdup(key.val.string.val, key.val.string.len);
		if (strcmp(field, "version") == 0 || strcmp(field, "op") == 0)
			continue;
		for (i = 0; i < op->nargs; i++)
			if (strcmp(op->fields[i], field) == 0)
				break;
		if (i == op->nargs)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a registry request of operation \"%s\" has an unknown field \"%s\"",
							op->op, field),
					 errdetail("The fields of \"%s\" are %s.", op->op, op_fields(op)),
					 errhint("A member newer than its registry may need the registry updated first.")));
		seen[i] = true;
		if (val.type == jbvNull)
		{
			values[i] = (Datum) 0;
			nulls[i] = 'n';
		}
		else
		{
			ErrorContextCallback cb;

			cb.callback = field_context;
			cb.arg = field;
			cb.previous = error_context_stack;
			error_context_stack = &cb;
			values[i] = field_value(op, field, op->argtypes[i], &val);
			error_context_stack = cb.previous;
			nulls[i] = ' ';
		}
	}
	for (i = 0; i < op->nargs; i++)
		if (!seen[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a registry request of operation \"%s\" lacks field \"%s\"",
							op->op, op->fields[i]),
					 errdetail("Every field of \"%s\" is required (null where it has no value): %s.",
							   op->op, op_fields(op))));

	run_call(op->plan, values, nulls);
	answer = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	answer = SPI_datumTransfer(answer, false, -1);
	SPI_finish();
	PG_RETURN_DATUM(answer);
}
