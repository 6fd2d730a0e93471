/*-------------------------------------------------------------------------
 *
 * registry_call.h
 *	  One call of a member on the registry: a typed request
 *	  (snowid_registry_request, registry 2.1 on) or, where the registry
 *	  takes none, the positional call of 2.0 and before (registry_call.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_CALL_H
#define SNOWID_REGISTRY_CALL_H

/* the version of snowid's registry requests this library writes */
#define SNOWID_REQUEST_VERSION 1

typedef struct SnowidRegistryCall
{
	const char *op;				/* the operation's name in a request */
	const char *function;		/* its positional function */
	const char *signature;		/* that function with its argument types,
								 * for the check that it is the extension's
								 * own (a last column); NULL: not checked */
	int			nfields;
	const char *const *fields;	/* the fields, in the positional order */
	const char *const *exprs;	/* each one's value: an SQL expression of
								 * the query's parameters ($1, ...) */
	const char *columns;		/* the answer's columns with their types */
	bool		scalar;			/* the function returns one value, "value" */
	const char *select;			/* the select list, over the answer "c" */
} SnowidRegistryCall;

struct pg_result;

extern struct pg_result *snowid_registry_call(const SnowidRegistryCall *call,
											  int nparams,
											  const char *const *values,
											  int timeout_ms, char **error,
											  bool *failed);

#endif							/* SNOWID_REGISTRY_CALL_H */
