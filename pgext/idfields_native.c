/*
 * idfields_native: idfields.next_snowflake() and next_traceid() in one C call.
 *
 * The PL/pgSQL functions of idfields/sql/functions/0001.sql hold every rule of the lease (claims,
 * renewals, durable fences, clock checks, refusals); this file holds none of them. One call does
 * what the inlined SQL hot path does (currval() + 1 of the session's temporary sequence
 * pg_temp.idfields_<layout>, issued with setval() while it lies in the validated tick) and what
 * issue_<layout>()'s check of a transaction's first ID and of a new tick does (the claim
 * 'idfields.<layout>_lease' is on this very sequence, the transaction may write, the caller
 * finds the claim's lease table, the last ID is on the claim's node inside the limit
 * 'idfields.<layout>_limit'; then it sets the switch 'idfields.<layout>'). It reads and
 * writes that same state, so the PL/pgSQL functions of the session always see the true last ID;
 * anything else goes to the PL/pgSQL idfields.issue_<layout>(visible_lease), which runs as its
 * owner and raises the refusals (standby, read-only transaction). The checks here are those
 * functions' own, and stricter where a setting is malformed or the switch names another
 * relation: this path then leaves the decision to PL/pgSQL. tests/pg/test_native.py holds it
 * to PL/pgSQL's IDs from the same state, call by call.
 *
 * It runs as the caller and acts only on the session's own temporary sequence: a switch or claim
 * naming another relation is never acted on (D4 of docs/explanation/lease-protocol-database.md).
 * setval(), never nextval(): the caller's lastval() is left alone.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
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

/*
 * A built-in layout: its names and clock; its tests are snowflake_hot(), traceid_hot() and
 * resumes() below.
 */
typedef struct Layout
{
	char	   *sequence;		/* pg_temp.<sequence> */
	const char *switch_name;	/* transaction-local: the sequence's OID */
	const char *claim_name;		/* session: node:acquired:promise:sequence:holder:lease table */
	const char *limit_name;		/* session: the last tick the claim covers */
	char	   *issue;			/* idfields.<issue>(visible_lease regclass) */
	char	   *issue_at;		/* idfields.<issue_at>(now_tick bigint, visible_lease regclass) */
	int64		epoch_ms;
	int64		ms_per_tick;
	bool		wraps;
} Layout;

static const Layout snowflake = {
	"idfields_snowflake", "idfields.snowflake", "idfields.snowflake_lease",
	"idfields.snowflake_limit", "issue_snowflake", "issue_snowflake_at",
	INT64CONST(1704067200000), 1, false
};

static const Layout traceid = {
	"idfields_traceid", "idfields.traceid", "idfields.traceid_lease",
	"idfields.traceid_limit", "issue_traceid", "issue_traceid_at", 0, 1000, true
};

/*
 * What one calling expression (one statement's execution) keeps between its calls: the switch
 * it verified names the session's own sequence, so a bulk INSERT looks the sequence up once,
 * not once a row (a switch that changes is verified again), and the PL/pgSQL issuer.
 */
typedef struct Cache
{
	char		verified_switch[16];
	Oid			sequence;
	Oid			function;
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

/* a + b, or a - b when subtract, raising as PostgreSQL's int8 operators do on overflow. */
static int64
checked(int64 a, int64 b, bool subtract)
{
	int64		result;

	if (subtract ? pg_sub_s64_overflow(a, b, &result) : pg_add_s64_overflow(a, b, &result))
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

/* An int8 the way the SQL's ::bigint reads the settings; false for anything doubtful. */
static bool
parse_int64(const char *text, int64 *out)
{
	char	   *end;
	long long	value;

	if (text == NULL || *text == '\0')
		return false;
	errno = 0;
	value = strtoll(text, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = (int64) value;
	return true;
}

/* to_regclass('pg_temp.<sequence>'): the session's own sequence, InvalidOid if none. */
static Oid
own_sequence(const Layout *layout)
{
	Oid			namespace = LookupExplicitNamespace("pg_temp", true);

	return OidIsValid(namespace) ? get_relname_relid(layout->sequence, namespace) : InvalidOid;
}

/* to_regclass('idfields_node_lease') under the caller's search_path. */
static Oid
visible_lease(void)
{
	static char name[] = "idfields_node_lease";

	return RangeVarGetRelid(makeRangeVar(NULL, name, -1), NoLock, true);
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

static int64
issue_on(Oid sequence, int64 id)
{
	return DatumGetInt64(DirectFunctionCall2(setval_oid, ObjectIdGetDatum(sequence),
											 Int64GetDatum(id)));
}

/* The claim's six fields (split_part(claim, ':', 1..6)); false unless it has exactly six. */
static bool
claim_fields(const Layout *layout, char *fields[6])
{
	const char *setting = GetConfigOption(layout->claim_name, true, false);
	char	   *copy;
	int			count = 1;

	if (setting == NULL)
		return false;
	copy = pstrdup(setting);
	fields[0] = copy;
	for (char *c = copy; *c != '\0'; c++)
	{
		if (*c != ':')
			continue;
		if (count == 6)
			return false;
		*c = '\0';
		fields[count++] = c + 1;
	}
	return count == 6;
}

static bool
is_oid_text(const char *text, Oid oid)
{
	char		buffer[16];

	snprintf(buffer, sizeof(buffer), "%u", oid);
	return strcmp(text, buffer) == 0;
}

static void
set_switch(const Layout *layout, const char *sequence)
{
	(void) set_config_option(layout->switch_name, sequence, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
}

/* next_snowflake()'s hot path: the candidate is not behind the tick and did not carry. */
static bool
snowflake_hot(int64 candidate, int64 tick)
{
	return (checked(candidate, shl64(tick, 22), true) & INT64CONST(-9223372036854771713)) > 0;
}

/* next_traceid()'s hot path: the candidate is in the tick mod 2^25 with counter >= 1. */
static bool
traceid_hot(int64 candidate, int64 tick)
{
	return (((checked(candidate, shl64(tick & 33554431, 38), true)
			  & INT64CONST(9223371487103156223)) - 1) & INT64CONST(-4194304)) == 0;
}

/*
 * issue_<layout>()'s going on with the session's claim, for a transaction's first ID or a new
 * tick: the claim is on this very sequence, and the switch is set or the transaction may write
 * and the caller finds the claim's lease table; the last ID and the next are on the claim's
 * node, inside the limit (snowflake: the next in this tick or a later one, at most 1,000 ticks
 * ahead; traceid: the one after the last, in this tick). The switch is set with the ID.
 */
static bool
resumes(const Layout *layout, Oid sequence, bool switched, Oid lease, int64 tick, int64 *id)
{
	char	   *claim[6];
	int64		last;
	int64		node;
	int64		limit;
	int64		base;
	int64		next;

	if (!claim_fields(layout, claim) || !is_oid_text(claim[3], sequence))
		return false;
	if (!switched && (XactReadOnly || (OidIsValid(lease) && !is_oid_text(claim[5], lease))))
		return false;
	if (!last_value(sequence, &last) || !parse_int64(claim[0], &node)
		|| !parse_int64(GetConfigOption(layout->limit_name, true, false), &limit))
		return false;
	if (layout->wraps)
	{
		base = shl64(node, 22) | 1;
		next = checked(last, 1, false);
		if (((last ^ base) & INT64CONST(-9223371761981063168)) != 0 || tick > limit
			|| !traceid_hot(next, tick))
			return false;
	}
	else
	{
		base = shl64(node, 12);
		next = Max(checked(last, 1, false), shl64(tick, 22) | base);
		if ((((last ^ base) | (next ^ base)) & INT64CONST(-9223372036850585600)) != 0
			|| (next >> 22) > checked(tick, 1000, false) || (next >> 22) > limit)
			return false;
	}
	set_switch(layout, claim[3]);
	*id = next;
	return true;
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

	if (!OidIsValid(cache->function))
	{
		/*
		 * By the catalog, as the inlined SQL's bound call finds it: no search_path, and no
		 * USAGE on schema idfields asked of a caller whose column default runs it.
		 */
		Oid			types[2] = {INT8OID, REGCLASSOID};
		const char *name = hook ? layout->issue_at : layout->issue;
		oidvector  *arguments = buildoidvector(hook ? types : types + 1, count);
		Oid			schema = get_namespace_oid("idfields", true);
		Oid			function = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
											   CStringGetDatum(name),
											   PointerGetDatum(arguments),
											   ObjectIdGetDatum(schema));

		if (!OidIsValid(function))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("idfields_native: idfields.%s(%sregclass) does not exist", name,
							hook ? "bigint, " : ""),
					 errhint("Install the idfields database functions (the idfields migration): "
							 "this extension hands everything but the common case to them.")));
		fmgr_info_cxt(function, &cache->flinfo, fcinfo->flinfo->fn_mcxt);
		cache->function = function;
	}
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

static Datum
next_id(FunctionCallInfo fcinfo, const Layout *layout, bool hook)
{
	Cache	   *cache = cache_of(fcinfo);
	const char *switch_value = GetConfigOption(layout->switch_name, true, false);
	bool		switched = switch_value != NULL && OidIsValid(cache->sequence)
		&& strcmp(switch_value, cache->verified_switch) == 0;
	Oid			sequence = switched ? cache->sequence : own_sequence(layout);
	int64		tick;
	int64		id;
	Oid			lease;

	if (hook && PG_ARGISNULL(0))
		return issue(fcinfo, layout, hook, visible_lease());
	tick = hook ? PG_GETARG_INT64(0) : clock_tick(layout);
	if (!switched && OidIsValid(sequence) && switch_value != NULL
		&& is_oid_text(switch_value, sequence))
	{
		switched = true;
		cache->sequence = sequence;
		strlcpy(cache->verified_switch, switch_value, sizeof(cache->verified_switch));
	}
	if (switched)
	{
		id = checked(DatumGetInt64(DirectFunctionCall1(currval_oid,
													   ObjectIdGetDatum(sequence))), 1, false);
		if (layout->wraps ? traceid_hot(id, tick) : snowflake_hot(id, tick))
			PG_RETURN_INT64(issue_on(sequence, id));
	}
	lease = visible_lease();
	if (OidIsValid(sequence) && resumes(layout, sequence, switched, lease, tick, &id))
		PG_RETURN_INT64(issue_on(sequence, id));
	return issue(fcinfo, layout, hook, lease);
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
