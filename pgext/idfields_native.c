/*
 * idfields_native: idfields.next_snowflake() and next_traceid() in one C call.
 *
 * The PL/pgSQL functions of idfields/sql/functions/0001.sql hold every rule of the lease (claims,
 * renewals, durable fences, clock checks, refusals); this file holds none of them. One call does
 * what the PL/pgSQL hot path next_<layout>_on() does (D9 of
 * docs/explanation/lease-protocol-database.md): the successor of the session's last ID, in its
 * position pg_temp.idfields_<layout>, with the node and constants of its window
 * pg_temp."idfields:<layout>" put in, moved up to the clock's tick (snowflake) or kept in the
 * window's tick while that is the clock's or the next (traceid), issued with setval() while it
 * lies before the window's last ID. Both sequences must be the functions' owner's (the owner of
 * idfields.issue_<layout>(regclass)), who alone writes them: they are read and the position
 * written as that owner, as the PL/pgSQL hot path runs, so nothing the calling role can write
 * (its settings, a sequence of its own in their place) decides an ID. Anything else goes to the
 * PL/pgSQL idfields.issue_<layout>(visible_lease), which runs as its owner and raises the
 * refusals (standby, read-only transaction, another lease table on the caller's search_path).
 * tests/pg/test_native.py holds it to PL/pgSQL's IDs from the same state, call by call.
 *
 * setval(), never nextval(): the caller's lastval() is left alone.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "access/htup_details.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

PG_MODULE_MAGIC;

/* A built-in layout: its names, clock and where its fields sit, as the SQL renders them. */
typedef struct Layout
{
	char	   *position;		/* pg_temp.<position>: the last ID issued */
	char	   *window;			/* pg_temp.<window>: the last ID the hot path may issue */
	char	   *issue;			/* idfields.<issue>(visible_lease regclass) */
	char	   *issue_at;		/* idfields.<issue_at>(now_tick bigint, visible_lease regclass) */
	int64		epoch_ms;
	int64		ms_per_tick;
	bool		wraps;
	int			ts_shift;
	int64		middle;			/* node and constant bits, between timestamp and sequence */
	int64		seq_min;
	int64		period_mask;	/* a wrapping layout's ticks, mod the period */
} Layout;

static const Layout snowflake = {
	"idfields_snowflake", "idfields:snowflake", "issue_snowflake", "issue_snowflake_at",
	INT64CONST(1704067200000), 1, false, 22, INT64CONST(4190208), 0, INT64CONST(2199023255551)
};

static const Layout traceid = {
	"idfields_traceid", "idfields:traceid", "issue_traceid", "issue_traceid_at", 0, 1000, true,
	38, INT64CONST(274873712640), 1, INT64CONST(33554431)
};

/*
 * What one calling expression (one statement's execution) keeps between its calls: the
 * PL/pgSQL issuer, its owner, whether the caller's search_path finds the functions' lease table
 * (or none), and the session's window and position once found the owner's: looked up again
 * where DISCARD TEMP dropped them between two calls of the statement (a cursor's FETCHes, a
 * function in the query), as the PL/pgSQL hot path is planned again.
 */
typedef struct Cache
{
	Oid			function;
	Oid			owner;
	Oid			lease;
	bool		lease_checked;
	bool		lease_ours;
	Oid			window;
	Oid			position;
	FmgrInfo	flinfo;
} Cache;

static Cache *
cache_of(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
														  sizeof(Cache));
	return (Cache *) fcinfo->flinfo->fn_extra;
}

/* a + b, raising as PostgreSQL's int8 operators do on overflow. */
static int64
checked_add(int64 a, int64 b)
{
	int64		result;

	if (pg_add_s64_overflow(a, b, &result))
		ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						errmsg("bigint out of range")));
	return result;
}

/* x << bits as PostgreSQL's int8 shift computes it: no overflow check. */
static int64
shl64(int64 x, int bits)
{
	return (int64) ((uint64) x << bits);
}

/*
 * The clock's tick as the SQL computes it: (date_part('epoch', clock_timestamp()) * 1000000)
 * ::bigint / 1000 is unix ms, in float8 like date_part().
 */
static int64
clock_tick(const Layout *layout)
{
	TimestampTz now = GetCurrentTimestamp();
	double		seconds = ((double) now - (double) SetEpochTimestamp()) / 1000000.0;
	int64		unix_ms = (int64) rint(seconds * 1000000.0) / 1000;

	return (unix_ms - layout->epoch_ms) / layout->ms_per_tick;
}

/* to_regclass('idfields_node_lease') under the caller's search_path. */
static Oid
visible_lease(void)
{
	static char name[] = "idfields_node_lease";

	return RangeVarGetRelid(makeRangeVar(NULL, name, -1), NoLock, true);
}

/* The session's temporary relation pg_temp.<name> when owner owns it, else InvalidOid. */
static Oid
owned(Oid namespace, char *name, Oid owner)
{
	Oid			relation = get_relname_relid(name, namespace);
	HeapTuple	tuple;
	bool		ours;

	if (!OidIsValid(relation))
		return InvalidOid;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	ours = ((Form_pg_class) GETSTRUCT(tuple))->relowner == owner;
	ReleaseSysCache(tuple);
	return ours ? relation : InvalidOid;
}

static bool
last_value(Oid sequence, int64 *out)
{
	LOCAL_FCINFO(call, 1);
	Datum		result;

	InitFunctionCallInfoData(*call, NULL, 1, InvalidOid, NULL, NULL);
	call->args[0].value = ObjectIdGetDatum(sequence);
	call->args[0].isnull = false;
	result = pg_sequence_last_value(call);
	if (call->isnull)
		return false;
	*out = DatumGetInt64(result);
	return true;
}

/*
 * next_<layout>_on()'s ID at tick from the last ID and the window's, or false where the hot
 * path may not issue it: the successor (a carry out of the sequence going on in the next tick)
 * with the window's node and constants, moved up to the tick's start (growing) or to the
 * window's tick while that is the clock's or the next (wrapping), before the window's last ID.
 */
static bool
candidate(const Layout *layout, int64 last, int64 bound, int64 tick, int64 *id)
{
	int64		successor = checked_add(last | layout->middle, 1) & ~layout->middle;
	int64		lowest;

	if (layout->wraps)
	{
		int64		ahead;

		if (pg_sub_s64_overflow(bound >> layout->ts_shift, tick, &ahead))
			ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							errmsg("bigint out of range")));
		if ((ahead & layout->period_mask) > 1)
			return false;
		lowest = (bound & ~(shl64(1, layout->ts_shift) - 1)) | layout->seq_min;
	}
	else
		lowest = shl64(tick, layout->ts_shift) | layout->seq_min;
	*id = Max(successor, lowest) | (bound & layout->middle);
	return *id < bound;
}

/* idfields.issue_<layout>(visible_lease), or issue_<layout>_at(now_tick, ...) for a hook. */
static Datum
issue(FunctionCallInfo fcinfo, const Layout *layout, bool hook, Oid lease)
{
	Cache	   *cache = cache_of(fcinfo);
	LOCAL_FCINFO(call, 2);
	AclResult	allowed;
	Datum		result;
	int			count = hook ? 2 : 1;

	/* What the SQL wrapper's call would check: the caller's EXECUTE on the issuer. */
	allowed = pg_proc_aclcheck(cache->function, GetUserId(), ACL_EXECUTE);
	if (allowed != ACLCHECK_OK)
		aclcheck_error(allowed, OBJECT_FUNCTION, get_func_name(cache->function));
	InitFunctionCallInfoData(*call, &cache->flinfo, count, InvalidOid, NULL, NULL);
	if (hook)
		call->args[0] = fcinfo->args[0];
	call->args[count - 1].value = ObjectIdGetDatum(lease);
	call->args[count - 1].isnull = !OidIsValid(lease);
	result = FunctionCallInvoke(call);
	fcinfo->isnull = call->isnull;
	return result;
}

/* The issuer and its owner, by the catalog, as the inlined SQL's bound call finds it. */
static void
find_issuer(FunctionCallInfo fcinfo, const Layout *layout, bool hook)
{
	Cache	   *cache = cache_of(fcinfo);
	Oid			types[2] = {INT8OID, REGCLASSOID};
	const char *name = hook ? layout->issue_at : layout->issue;
	oidvector  *arguments = buildoidvector(hook ? types : types + 1, hook ? 2 : 1);
	Oid			schema = get_namespace_oid("idfields", true);
	Oid			function = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
										   CStringGetDatum(name),
										   PointerGetDatum(arguments),
										   ObjectIdGetDatum(schema));
	HeapTuple	tuple;

	/*
	 * No USAGE on schema idfields is asked of a caller whose column default runs this: the
	 * wrapper is bound to it, as the PL/pgSQL hot path is to the issuer.
	 */
	if (!OidIsValid(function))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("idfields_native: idfields.%s(%sregclass) does not exist", name,
						hook ? "bigint, " : ""),
				 errhint("Install the idfields database functions (the idfields migration): "
						 "this extension hands everything but the common case to them.")));
	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(function));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", function);
	cache->owner = ((Form_pg_proc) GETSTRUCT(tuple))->proowner;
	ReleaseSysCache(tuple);
	fmgr_info_cxt(function, &cache->flinfo, fcinfo->flinfo->fn_mcxt);
	cache->function = function;
}

/*
 * The functions' lease table, idfields.lease_table(), once a backend per install (the function's
 * OID and row version): an install writes it in, and a new install replaces the function.
 */
static Oid
functions_lease(void)
{
	static Oid	function = InvalidOid;
	static TransactionId version = InvalidTransactionId;
	static Oid	lease = InvalidOid;
	Oid			schema = get_namespace_oid("idfields", true);
	Oid			found = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
										CStringGetDatum("lease_table"),
										PointerGetDatum(buildoidvector(NULL, 0)),
										ObjectIdGetDatum(schema));
	HeapTuple	tuple;
	TransactionId written;

	if (!OidIsValid(found))
		return InvalidOid;
	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(found));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	written = HeapTupleHeaderGetRawXmin(tuple->t_data);
	ReleaseSysCache(tuple);
	if (found != function || written != version)
	{
		lease = DatumGetObjectId(OidFunctionCall0(found));
		function = found;
		version = written;
	}
	return lease;
}

/* Whether the caller's search_path finds the functions' lease table, or none: checked once. */
static bool
lease_is_ours(Cache *cache)
{
	if (!cache->lease_checked)
	{
		cache->lease = visible_lease();
		cache->lease_ours = !OidIsValid(cache->lease) || functions_lease() == cache->lease;
		cache->lease_checked = true;
	}
	return cache->lease_ours;
}

/*
 * The hot path, as the issuer's owner: both sequences the owner's, the window and position
 * read, the candidate issued with setval(); false where the issuer must take over.
 */
static bool
hot(const Layout *layout, Cache *cache, int64 tick, int64 *id)
{
	Oid			caller;
	int			context;
	int64		bound;
	int64		last;
	bool		issued = false;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(cache->window))
		|| !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(cache->position)))
	{
		Oid			namespace = LookupExplicitNamespace("pg_temp", true);

		if (!OidIsValid(namespace))
			return false;
		cache->window = owned(namespace, layout->window, cache->owner);
		cache->position = owned(namespace, layout->position, cache->owner);
		if (!OidIsValid(cache->window) || !OidIsValid(cache->position))
			return false;
	}
	GetUserIdAndSecContext(&caller, &context);
	SetUserIdAndSecContext(cache->owner, context | SECURITY_LOCAL_USERID_CHANGE);
	if (last_value(cache->window, &bound) && last_value(cache->position, &last)
		&& candidate(layout, last, bound, tick, id))
	{
		(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(cache->position),
								   Int64GetDatum(*id));
		issued = true;
	}
	SetUserIdAndSecContext(caller, context);
	return issued;
}

static Datum
next_id(FunctionCallInfo fcinfo, const Layout *layout, bool hook)
{
	Cache	   *cache = cache_of(fcinfo);
	int64		id;

	if (!OidIsValid(cache->function))
		find_issuer(fcinfo, layout, hook);
	if (hook && PG_ARGISNULL(0))
		return issue(fcinfo, layout, hook, visible_lease());
	if (lease_is_ours(cache) && !RecoveryInProgress()
		&& hot(layout, cache, hook ? PG_GETARG_INT64(0) : clock_tick(layout), &id))
		PG_RETURN_INT64(id);
	return issue(fcinfo, layout, hook, cache->lease);
}

PG_FUNCTION_INFO_V1(idfields_native_next_snowflake);
Datum
idfields_native_next_snowflake(PG_FUNCTION_ARGS)
{
	return next_id(fcinfo, &snowflake, false);
}

PG_FUNCTION_INFO_V1(idfields_native_next_snowflake_at);
Datum
idfields_native_next_snowflake_at(PG_FUNCTION_ARGS)
{
	return next_id(fcinfo, &snowflake, true);
}

PG_FUNCTION_INFO_V1(idfields_native_next_traceid);
Datum
idfields_native_next_traceid(PG_FUNCTION_ARGS)
{
	return next_id(fcinfo, &traceid, false);
}

PG_FUNCTION_INFO_V1(idfields_native_next_traceid_at);
Datum
idfields_native_next_traceid_at(PG_FUNCTION_ARGS)
{
	return next_id(fcinfo, &traceid, true);
}
