-- idfields_native: the C hot path of idfields.next_snowflake() and next_traceid(), beside the
-- PL/pgSQL functions of idfields/sql/functions/0001.sql, which keep every rule of the lease
-- (docs/how-to/native-extension.md). Each function takes nothing a caller could forge: it acts
-- on the session's window and position as their owner, the owner of the idfields functions,
-- and hands anything but the common case to idfields.issue_<layout>(visible_lease), which runs
-- as that owner.
\echo Use "CREATE EXTENSION idfields_native" to load this file. \quit

-- The install of the idfields functions, run by their owner (any role), finds wire() here;
-- every function PUBLIC may run takes nothing forgeable, and the hooks are revoked below.
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

CREATE FUNCTION @extschema@.next_snowflake() RETURNS bigint
AS 'MODULE_PATHNAME', 'idfields_native_next_snowflake'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.next_traceid() RETURNS bigint
AS 'MODULE_PATHNAME', 'idfields_native_next_traceid'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Test hooks, like idfields.next_<layout>_at(now_tick): they issue at any tick they are given,
-- so PUBLIC may not run them (a grantee needs idfields.issue_<layout>_at too).
CREATE FUNCTION @extschema@.next_snowflake_at(now_tick bigint) RETURNS bigint
AS 'MODULE_PATHNAME', 'idfields_native_next_snowflake_at'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.next_traceid_at(now_tick bigint) RETURNS bigint
AS 'MODULE_PATHNAME', 'idfields_native_next_traceid_at'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION @extschema@.next_snowflake_at(bigint), @extschema@.next_traceid_at(bigint)
    FROM PUBLIC;

-- wire() points idfields.next_snowflake() and next_traceid() at the C functions: inlined SQL
-- wrappers, bound (BEGIN ATOMIC) to them, so DROP EXTENSION is refused while they are wired.
-- The idfields install script (0001.sql) calls it at its end when this extension is installed;
-- after a CREATE EXTENSION over installed functions, call it once (as their owner or a
-- superuser). CREATE OR REPLACE keeps each function's OID: column defaults follow.
-- wire(false) points them back at PL/pgSQL, each a plain call of idfields.issue_<layout>(), so
-- DROP EXTENSION goes through; the idfields install run again restores the PL/pgSQL hot
-- paths. Either needs the caller to own the functions, as any CREATE OR REPLACE does.
CREATE FUNCTION @extschema@.wire(native boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    layout text;
BEGIN
    FOREACH layout IN ARRAY ARRAY['snowflake', 'traceid'] LOOP
        IF pg_catalog.to_regprocedure('idfields.issue_' || layout || '(regclass)') IS NULL THEN
            RAISE EXCEPTION 'idfields_native: idfields.issue_%(regclass) does not exist', layout
                USING ERRCODE = '42883',
                HINT = 'Install the idfields database functions first (the idfields migration); '
                       'they call idfields_native.wire() at their end.';
        END IF;
        EXECUTE pg_catalog.format('CREATE OR REPLACE FUNCTION idfields.%I() RETURNS bigint '
            'LANGUAGE sql VOLATILE PARALLEL UNSAFE BEGIN ATOMIC SELECT %s; END',
            'next_' || layout, CASE WHEN native
                THEN pg_catalog.format('@extschema@.%I()', 'next_' || layout)
                ELSE pg_catalog.format('idfields.%I(pg_catalog.to_regclass(%L))',
                    'issue_' || layout, 'idfields_node_lease') END);
    END LOOP;
END
$$;
