-- idfields SQL 0001: schema idfields, the database-side ID functions.
--
-- next_snowflake(), next_traceid() and next_decimal() issue IDs of the layouts of
-- idfields.layouts, take_<layout>(n) and take_<layout>_ranges(n) many at once, and
-- decode_snowflake/_traceid/_decimal(bigint) agree with Python's Layout.decode bit for bit. A
-- backend leases its node from idfields_node_lease as an app process does: load(version,
-- lease_schema=...) writes the tables' schema where @lease_schema@ stands, and the install's node
-- range where @first_node@ and @last_node@ stand.
--
-- Every statement is idempotent (CREATE OR REPLACE), so installing over an earlier version
-- upgrades it in place; the last statement records the version in the schema's comment, which
-- the install operations read. The functions a caller runs run as the owner (SECURITY
-- DEFINER): the hot paths (next_<layout>(), next_decimal()), whose expressions are planned once
-- a session and which alone write the session's position, hand everything else to PL/pgSQL with
-- the layout's geometry written in and a pinned search_path; the internal functions, which take
-- a layout, lease key, geometry or tick, are revoked from PUBLIC. Every name is schema-qualified:
-- pg_dump restores with an empty search_path.
--
-- The rules these functions keep, and why, are in docs/explanation/: lease-protocol.md (L1-L9)
-- and lease-protocol-database.md (D1-D9) for claims, renewals, resets, rollbacks, durable fences
-- and decimal generator ids; postgresql-internals.md for the slow path's steps and settings, the
-- clock, node ranges, name binding, grants, what is not supported and what a transaction pays.

SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

CREATE SCHEMA IF NOT EXISTS idfields;

-- The calling transaction's COMMIT waits for its WAL to reach the disk (and a synchronous
-- standby), whatever synchronous_commit says, unless that is stricter: a lease row, a fence or
-- an allocator block lost in a crash after the client saw its IDs would be handed out again.
CREATE OR REPLACE FUNCTION idfields.commit_durably() RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT NULL::void FROM pg_catalog.set_config('synchronous_commit', 'on', true)
    WHERE pg_catalog.current_setting('synchronous_commit') IN ('off', 'local', 'remote_write')
$$;

-- The advisory-lock class of a layout's leases: 31 bits of md5 of its lease key.
CREATE OR REPLACE FUNCTION idfields.lease_lock_key(layout text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT (('x' || pg_catalog.substr(pg_catalog.md5('idfields_node_lease:' || layout), 1, 8))
        ::bit(32)::integer) & 2147483647;
END;

-- This backend as a lease holder: 'pg:<pid>:<backend start, unix ms>', the start left empty
-- where the current role may not read it. A backend knows its rows by the pid alone (D3): pids
-- are unique among live backends, so a row naming this pid is this backend's or an exited
-- one's, and either way nothing on its node lies past its limit and durable fence (D7).
CREATE OR REPLACE FUNCTION idfields.backend_holder() RETURNS text
LANGUAGE sql VOLATILE PARALLEL RESTRICTED
BEGIN ATOMIC
    SELECT 'pg:' || pg_catalog.pg_backend_pid() || ':' || COALESCE(
        (SELECT ((pg_catalog.date_part('epoch', a.backend_start) * 1000000)::bigint / 1000)::text
         FROM pg_catalog.pg_stat_activity AS a
         WHERE a.pid = pg_catalog.pg_backend_pid()), '');
END;

-- Unix milliseconds of clock_timestamp(), with integer rounding (no float floor error).
CREATE OR REPLACE FUNCTION idfields.clock_ms() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE
BEGIN ATOMIC
    SELECT (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000;
END;

-- Unix microseconds of clock_timestamp(), for layouts whose unit or epoch is finer than 1 ms.
CREATE OR REPLACE FUNCTION idfields.clock_us() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE
BEGIN ATOMIC
    SELECT (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint;
END;

-- The functions that run as the owner lease from the idfields tables with the owner's
-- privileges (see GRANTS): an owner without them would fail every session's first ID.
DO $owner$
DECLARE
    needed text[] := ARRAY['@lease_schema@.idfields_node_lease:SELECT, INSERT, UPDATE',
        '@lease_schema@.idfields_counter:SELECT, INSERT, UPDATE',
        '@lease_schema@.idfields_launch:SELECT, INSERT'];
    item text;
BEGIN
    FOREACH item IN ARRAY needed LOOP
        IF pg_catalog.to_regclass(pg_catalog.split_part(item, ':', 1)) IS NOT NULL
            AND NOT pg_catalog.has_table_privilege(pg_catalog.split_part(item, ':', 1),
                pg_catalog.split_part(item, ':', 2))
        THEN
            RAISE EXCEPTION 'idfields: the role installing the database functions (%) lacks % '
                'on %, and the functions run as that role', current_user,
                pg_catalog.split_part(item, ':', 2), pg_catalog.split_part(item, ':', 1)
                USING ERRCODE = '42501',
                HINT = pg_catalog.format('GRANT %s ON %s TO %I, or install the functions as '
                    'the role that owns the idfields tables.', pg_catalog.split_part(item, ':', 2),
                    pg_catalog.split_part(item, ':', 1), current_user);
        END IF;
    END LOOP;
END
$owner$;

-- Durable fences (invariant D7 of docs/explanation/lease-protocol-database.md): permanent
-- sequences of each layout, idfields.fence_<lease_lock_key(lease key)>_<node % 1024>, which its
-- install creates (the layout's functions below, and those of user layouts), owned by the
-- installing role; everyone may read them (SELECT: no nextval(), no setval()), only the owner
-- (the functions) writes them. A layout's 1,024 first nodes have one each; a layout with more
-- nodes shares each among its nodes that agree mod 1,024 (traceid: 64), and a sequence holds
-- the largest value any of them wrote. No two layouts share one: a layout of long ticks runs
-- its fences further ahead of the clock than another layout's window. The value is unix ms: no
-- ID of those nodes lies at or past it beyond what their committed lease rows say. setval() is
-- not undone by ROLLBACK, nor by DISCARD or the backend's exit, which undo or drop everything
-- else a backend keeps.

-- The fence sequence of a node of the layout whose lease_lock_key() is lock_key; NULL where the
-- layout's functions are not installed.
CREATE OR REPLACE FUNCTION idfields.fence_sequence(lock_key integer, node integer)
RETURNS regclass
LANGUAGE sql STABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT pg_catalog.to_regclass('idfields.fence_' || lock_key || '_' || node % 1024);
END;

-- The durable fence of a node, unix ms (0: none written): a claim of the node starts at or
-- after it. Internal; an app process's claim (LeaseSource, on PostgreSQL) reads the sequence
-- itself.
CREATE OR REPLACE FUNCTION idfields.node_fence_ms(lock_key integer, node integer) RETURNS bigint
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.pg_sequence_last_value(idfields.fence_sequence(lock_key, node)),
        0);
END;

-- Raise a node's fence sequence to until_ms (never lowers it). Nodes share a sequence, and
-- setval() is no compare-and-set: an advisory lock (class 1057257585 =
-- lease_lock_key('idfields_fence'), object node % 1024, which layouts share: it only orders the
-- raises) makes the read and the write one step. It is a transaction lock taken inside a block
-- that always ends in an exception: the block's subtransaction ends, and lets the lock go,
-- before the function returns, whether the raise wrote, failed or was cancelled (setval() is not
-- undone with it). Every role may take advisory locks: a session holding this one is waited for
-- about a second at most, then named. A raise to where the fence stands takes no lock. Few
-- statements: after a pooler's DISCARD ALL each one is planned again.
CREATE OR REPLACE FUNCTION idfields.raise_node_fence(lock_key integer, node integer,
    until_ms bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
AS $$
DECLARE
    seq regclass := idfields.fence_sequence(lock_key, node);
    waited_ms integer := 0;
BEGIN
    IF seq IS NULL THEN
        RAISE EXCEPTION 'idfields: the durable fence idfields.fence_%_% is missing', lock_key,
            node % 1024
            USING ERRCODE = '55000',
            HINT = 'The layout''s functions create its fences: install them again '
                   '(InstallLayoutFunctions, or the SQL functions for snowflake and traceid).';
    END IF;
    IF until_ms <= COALESCE(pg_catalog.pg_sequence_last_value(seq), 0) THEN
        RETURN;  -- a fence only grows: a raise to where it stands writes nothing
    END IF;
    BEGIN
        WHILE NOT pg_catalog.pg_try_advisory_xact_lock(1057257585, node % 1024) LOOP
            IF waited_ms >= 1000 THEN
                RAISE EXCEPTION 'idfields: the durable fence % is locked by the session of pid % '
                    '(advisory lock of class 1057257585, object %) for over 1 s; only the '
                    'idfields functions take it, for a few microseconds', seq,
                    (SELECT pg_catalog.string_agg(l.pid::text, ', ') FROM pg_catalog.pg_locks AS l
                     WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 1057257585
                       AND l.objid = node % 1024 AND l.objsubid = 2), node % 1024
                    USING ERRCODE = '55P03',
                    HINT = 'End that session (pg_terminate_backend(pid)) or have it call '
                           'pg_advisory_unlock_all(), then retry; no ID was issued.';
            END IF;
            PERFORM pg_catalog.pg_sleep(LEAST(waited_ms + 1, 100) / 1000.0);
            waited_ms := waited_ms + LEAST(waited_ms + 1, 100);
        END LOOP;
        PERFORM pg_catalog.setval(seq, until_ms)
        WHERE until_ms > COALESCE(pg_catalog.pg_sequence_last_value(seq), 0);
        RAISE SQLSTATE 'IDF01';  -- ends the subtransaction, and the lock with it
    EXCEPTION WHEN SQLSTATE 'IDF01' THEN
        NULL;
    END;
END
$$;

-- The lease table the functions lease from (lease_schema of the install). An app process on
-- PostgreSQL leases from the table its search_path finds and refuses to when that is another
-- one: two tables would hand out one node space twice.
CREATE OR REPLACE FUNCTION idfields.lease_table() RETURNS regclass
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT pg_catalog.to_regclass('@lease_schema@.idfields_node_lease') $$;

-- The coordination database's epochs (invariants L10 and L11 of
-- docs/explanation/lease-protocol.md), in the rows and by the rule app claims keep
-- (idfields/coordination/_identity.py). The database is known by its identity, system
-- identifier / timeline / database OID. 'epoch:<identity>' (counter table, server-clock unix ms)
-- is since when it holds every commit: the server's start when the identity is first recorded
-- or the server restarted since, the time it was first seen when the identity changed (a
-- promoted standby, a restore, a copy). 'identity:<identity>' is the end of the grace after its
-- last possible loss, 0 for none. 'reset:<identity>' is the statistics' reset time
-- (pg_stat_bgwriter.stats_reset, unix us) the epoch began with: crash recovery discards the
-- statistics and sets a new one, whether the postmaster restarted or only reinitialized after
-- one backend's crash, and a clean restart keeps it. A new one counts as a loss, seen at once
-- or after later clean restarts: a restored snapshot of a running server's disk keeps the
-- identity, and so does a crash that lost a rolled-back transaction's durable fence. A clean
-- restart alone does not. pg_stat_reset_shared('bgwriter') (superusers, and roles granted it)
-- sets a new one too, and costs a grace.

-- Step: a new launch for DecimalId when any launch is recorded, as record_launch() takes it
-- (the 'launch' counter and max(id) + 1): generator ids of the older launches that the database
-- forgot may be in use.
CREATE OR REPLACE FUNCTION idfields.record_change_launch(what text) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    counted bigint;
    launch bigint;
BEGIN
    IF NOT EXISTS (SELECT FROM @lease_schema@.idfields_launch) THEN
        RETURN;
    END IF;
    INSERT INTO @lease_schema@.idfields_counter (name, value) VALUES ('launch', 0)
    ON CONFLICT (name) DO NOTHING;
    UPDATE @lease_schema@.idfields_counter AS c SET value = c.value + 1 WHERE c.name = 'launch'
    RETURNING c.value INTO counted;
    launch := GREATEST(counted, (SELECT max(l.id) FROM @lease_schema@.idfields_launch AS l) + 1);
    IF launch > 99999 THEN
        RAISE EXCEPTION 'idfields: all 99,999 launch ids are used, so no DecimalId generator can '
            'start' USING ERRCODE = '53400',
            HINT = 'Move DecimalId columns to a new layout (or a time-based one).';
    END IF;
    UPDATE @lease_schema@.idfields_counter AS c SET value = launch
    WHERE c.name = 'launch' AND c.value <> launch;
    INSERT INTO @lease_schema@.idfields_launch (id, label, created_at)
    VALUES (launch, pg_catalog.left('idfields: coordination database changed (' || what || ')',
        100), pg_catalog.now());
END
$$;

-- Step: record a new epoch of the database known as identity, its server started at started
-- (unix ms) and its statistics reset at reset_us (unix us): the identity first recorded,
-- changed (the epoch starts now), restarted or its statistics reset. Where it changed, came up
-- through crash recovery (recovered) or its statistics were reset since the last epoch, the
-- epoch may have lost commits: it starts at the later of the start and the reset, with a grace
-- of the longest lease recorded (longest) and a second for the clocks, and a new launch for
-- DecimalId. The caller holds the epoch's advisory lock (database_epoch); what another session
-- recorded meanwhile is kept.
CREATE OR REPLACE FUNCTION idfields.record_epoch(
    identity text, started bigint, reset_us bigint, recovered boolean, longest bigint
) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    now_ms bigint := idfields.clock_ms();
    known boolean;
    lossy boolean;
    since bigint;
    recorded_reset bigint;
BEGIN
    IF NOT EXISTS (SELECT FROM @lease_schema@.idfields_counter AS c
                   WHERE c.name = 'identity:' || identity) THEN
        known := EXISTS (SELECT FROM @lease_schema@.idfields_counter AS c
                         WHERE c.name LIKE 'identity:%');
        since := CASE WHEN known THEN now_ms ELSE started END;
        INSERT INTO @lease_schema@.idfields_counter (name, value)
        VALUES ('epoch:' || identity, since) ON CONFLICT (name) DO NOTHING;
        IF FOUND THEN
            IF known OR recovered THEN
                PERFORM idfields.record_change_launch(identity);
            END IF;
            INSERT INTO @lease_schema@.idfields_counter (name, value)
            VALUES ('identity:' || identity,
                CASE WHEN known OR recovered THEN since + longest + 1000 ELSE 0 END)
            ON CONFLICT (name) DO NOTHING;
            INSERT INTO @lease_schema@.idfields_counter AS c (name, value)
            VALUES ('reset:' || identity, reset_us)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value;
        END IF;
        RETURN;
    END IF;
    SELECT max(c.value) FILTER (WHERE c.name = 'epoch:' || identity),
        max(c.value) FILTER (WHERE c.name = 'reset:' || identity)
    INTO since, recorded_reset
    FROM @lease_schema@.idfields_counter AS c
    WHERE c.name IN ('epoch:' || identity, 'reset:' || identity);
    IF since >= started AND recorded_reset = reset_us THEN
        RETURN;  -- recorded by another session since the caller looked
    END IF;
    lossy := recovered OR COALESCE(recorded_reset <> reset_us, false);
    since := CASE WHEN lossy THEN GREATEST(started, reset_us / 1000) ELSE started END;
    INSERT INTO @lease_schema@.idfields_counter AS c (name, value)
    VALUES ('epoch:' || identity, since), ('reset:' || identity, reset_us)
    ON CONFLICT (name) DO UPDATE SET value = CASE WHEN c.name LIKE 'epoch:%'
        THEN GREATEST(c.value, excluded.value) ELSE excluded.value END;
    IF lossy THEN
        PERFORM idfields.record_change_launch(identity || ' restarted');
        UPDATE @lease_schema@.idfields_counter AS c
        SET value = GREATEST(c.value, since + longest + 1000)
        WHERE c.name = 'identity:' || identity;
    END IF;
END
$$;

-- Step: the end of the grace after the database's last possible loss (until_ms, unix ms; 0:
-- none), for a claim whose holders issue up to horizon_ms past their clock; its epoch recorded
-- where it is new (record_epoch). One statement where nothing is new: after a pooler's DISCARD
-- ALL each statement is planned again. A claim never waits: one session at a time records an
-- epoch (an advisory lock of class 1153602333 = lease_lock_key('idfields_epoch'), held to the
-- end of its transaction, which may be the caller's own), and the others assume the grace it
-- records; settled is false where that is a loss whose new launch they cannot see yet.
CREATE OR REPLACE FUNCTION idfields.database_epoch(
    horizon_ms bigint, OUT until_ms bigint, OUT settled boolean
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    identity text;
    started bigint;
    reset_us bigint;
    recovered boolean;
    since bigint;
    recorded_reset bigint;
    longest bigint;
    known boolean;
    lossy boolean;
BEGIN
    settled := true;
    FOR attempt IN 1..2 LOOP
        SELECT s.identity, s.started, s.reset_us, s.recovered,
            max(c.value) FILTER (WHERE c.name = 'identity:' || s.identity),
            max(c.value) FILTER (WHERE c.name = 'epoch:' || s.identity),
            max(c.value) FILTER (WHERE c.name = 'reset:' || s.identity),
            -- The ceiling on app ttls (the default ttl where none is recorded) bounds a ttl
            -- whose record the loss took with it.
            GREATEST(horizon_ms, max(c.value) FILTER (WHERE c.name = 'lease ttl ms'),
                COALESCE(max(c.value) FILTER (WHERE c.name = 'lease ttl ceiling ms'), 60000)),
            COALESCE(pg_catalog.bool_or(c.name LIKE 'identity:%'), false)
        INTO identity, started, reset_us, recovered, until_ms, since, recorded_reset, longest,
            known
        FROM (SELECT (SELECT p.system_identifier FROM pg_catalog.pg_control_system() AS p)::text
                  || '/' || ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(
                      pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint || '/'
                  || (SELECT d.oid FROM pg_catalog.pg_database AS d
                      WHERE d.datname = pg_catalog.current_database()) AS identity,
                  CAST(EXTRACT(EPOCH FROM pg_catalog.pg_postmaster_start_time()) * 1000
                      AS bigint) AS started,
                  -- Crash recovery discards the statistics and resets them, whether the
                  -- postmaster restarted or reinitialized; a clean start reads them back,
                  -- reset time included.
                  CAST(EXTRACT(EPOCH FROM pg_catalog.pg_stat_get_bgwriter_stat_reset_time())
                      * 1000000 AS bigint) AS reset_us,
                  pg_catalog.pg_stat_get_bgwriter_stat_reset_time()
                      >= pg_catalog.pg_postmaster_start_time() AS recovered) AS s
        LEFT JOIN @lease_schema@.idfields_counter AS c
            ON c.name IN ('identity:' || s.identity, 'epoch:' || s.identity,
                          'reset:' || s.identity, 'lease ttl ms', 'lease ttl ceiling ms')
            OR c.name LIKE 'identity:%'
        GROUP BY s.identity, s.started, s.reset_us, s.recovered;
        EXIT WHEN until_ms IS NOT NULL AND since >= started AND recorded_reset = reset_us;
        IF NOT pg_catalog.pg_try_advisory_xact_lock(1153602333, 0) THEN  -- being recorded
            lossy := recovered OR COALESCE(recorded_reset <> reset_us, false);
            settled := NOT (lossy OR (until_ms IS NULL AND known));
            until_ms := GREATEST(until_ms, CASE
                WHEN until_ms IS NULL AND known THEN idfields.clock_ms() + longest + 1000
                WHEN lossy THEN GREATEST(started, reset_us / 1000) + longest + 1000
                ELSE 0 END);
            RETURN;
        END IF;
        PERFORM idfields.record_epoch(identity, started, reset_us, recovered, longest);
    END LOOP;
END
$$;

-- The nodes this database issues on, set below by the install (see the header).
DO $node_range$
DECLARE
    first_node integer := @first_node@;
    last_node integer := @last_node@;
    old record;
    fence bigint := 0;
    lease regclass := pg_catalog.to_regclass('@lease_schema@.idfields_node_lease');
    held record;
    -- Nodes gained: a first install with a range, or a range wider than the installed one.
    gained boolean := first_node > 0 OR last_node < 2147483647;
BEGIN
    IF pg_catalog.to_regprocedure('idfields.node_range()') IS NOT NULL THEN
        EXECUTE 'SELECT * FROM idfields.node_range()' INTO old;
        fence := old.fenced_until_ms;
        gained := first_node < old.first_node OR last_node > old.last_node;
    END IF;
    IF gained THEN
        fence := GREATEST(fence, idfields.clock_ms() + 1000);
    END IF;
    IF lease IS NOT NULL THEN
        -- No claim or renewal runs meanwhile (they update the table).
        EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', lease);
        EXECUTE pg_catalog.format('SELECT l.layout, l.node, l.holder FROM %s AS l '
            'WHERE l.holder <> '''' AND l.expires_at_ms >= idfields.clock_ms() '
            'AND l.node NOT BETWEEN $1 AND $2 LIMIT 1', lease)
            INTO held USING first_node, last_node;
        IF held IS NOT NULL THEN
            RAISE EXCEPTION 'idfields: cannot narrow this database''s node range to %-%: '
                'node % of layout % is leased by % outside it', first_node, last_node,
                held.node, held.layout, held.holder
                USING ERRCODE = '55006',
                HINT = 'Another database may take the nodes given up only once nothing here '
                       'issues on them. Stop the processes and sessions issuing IDs from this '
                       'database (or wait for their leases to lapse), then run the migration '
                       'again; they claim inside the new range when they start.';
        END IF;
        EXECUTE pg_catalog.format('UPDATE %s AS l SET holder = '''' WHERE l.holder <> '''' '
            'AND l.node NOT BETWEEN $1 AND $2', lease) USING first_node, last_node;
    END IF;
    EXECUTE pg_catalog.format('CREATE OR REPLACE FUNCTION idfields.node_range('
        'OUT first_node integer, OUT last_node integer, OUT fenced_until_ms bigint) '
        'LANGUAGE sql IMMUTABLE PARALLEL SAFE BEGIN ATOMIC SELECT %s, %s, %s::bigint; END',
        first_node, last_node, fence);
END
$node_range$;

-- A time-based layout's geometry, as the issuers write it in and the slow path's steps take it:
-- the layout's name (its temporary sequence and settings), its lease key (the lease table's
-- layout column), where its fields sit, and its window (max_ahead ticks) and lease (lease_ms).
DO $geometry$
BEGIN
    IF pg_catalog.to_regtype('idfields.geometry') IS NULL THEN
        CREATE TYPE idfields.geometry AS (
            layout text, lease_key text, epoch_us bigint, unit_us bigint, ts_bits integer,
            ts_shift integer, wraps boolean, node_shift integer, node_min integer,
            node_max integer, seq_bits integer, seq_min bigint, fixed bigint, max_ahead bigint,
            lease_ms bigint);
    END IF;
END
$geometry$;

-- Step: refuse a slow-path call this session may not make, with the first refusal that applies
-- (time_slow_path tests the same conditions and calls this only when one holds).
CREATE OR REPLACE FUNCTION idfields.time_refuse(
    layout text, lease_key text, visible_lease regclass
) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
BEGIN
    IF pg_catalog.pg_is_in_recovery() THEN
        RAISE EXCEPTION 'idfields: cannot issue % IDs on a hot standby', layout
            USING ERRCODE = '25006',
            HINT = 'A standby cannot lease a node. Call idfields.next_*() on the primary, or '
                   'generate the IDs app-side (the idfields generators) beside a replica.';
    END IF;
    IF pg_catalog.current_setting('transaction_read_only') = 'on' THEN
        RAISE EXCEPTION 'idfields: cannot issue % IDs in a read-only transaction', layout
            USING ERRCODE = '25006',
            HINT = 'Every transaction checks, and may renew, this backend''s node lease. Call '
                   'idfields.next_*() in a read-write transaction, or generate the IDs app-side.';
    END IF;
    -- The settings and the sequence are the layout's, the lease rows the lease key's: a key
    -- of another layout would issue this layout's IDs on that layout's nodes.
    IF NOT (lease_key = layout OR (layout NOT IN ('snowflake', 'traceid')
            AND pg_catalog.starts_with(lease_key, pg_catalog.left(layout, 51) || '#')))
    THEN
        RAISE EXCEPTION 'idfields: lease key % is not the key of layout %', lease_key, layout
            USING ERRCODE = '22023',
            HINT = 'Call idfields.next_<layout>() or take_<layout>(n); the internal functions '
                   'take the layout''s own lease key (Layout.lease_key).';
    END IF;
    IF visible_lease <> '@lease_schema@.idfields_node_lease'::regclass THEN
        RAISE EXCEPTION 'idfields: the search_path of the session finds the lease table %, but '
            'the database functions lease from %', visible_lease,
            '@lease_schema@.idfields_node_lease'::regclass
            USING ERRCODE = '55000',
            HINT = 'App and database must lease nodes from one table, or they repeat IDs. Keep '
                   'one copy of the idfields tables on the search_path, or reinstall the '
                   'functions with lease_schema set to the schema the app uses.';
    END IF;
END
$$;

-- Step: wait for a clock that stepped back behind this backend's position, at most 1 s in all
-- (the app's generator waits as long); still behind, raise instead of repeating an ID. Returns
-- the clock's tick after the wait.
CREATE OR REPLACE FUNCTION idfields.time_wait_for_clock(
    layout text, tick bigint, now_tick bigint, unit_us bigint, max_ahead bigint
) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    wait_us bigint;
    waited_us bigint := 0;
    started bigint;
BEGIN
    WHILE tick > now_tick + max_ahead LOOP
        wait_us := (tick - max_ahead - now_tick) * unit_us;
        EXIT WHEN waited_us + wait_us > 1000000;
        waited_us := waited_us + wait_us;
        started := idfields.clock_us();
        PERFORM pg_catalog.pg_sleep(wait_us / 1000000.0);
        now_tick := now_tick + GREATEST(idfields.clock_us() - started, 0) / unit_us;
    END LOOP;
    IF tick > now_tick + max_ahead THEN
        RAISE EXCEPTION 'idfields: the clock is % ms behind the last % ID of this backend',
            (tick - now_tick) * unit_us / 1000, layout
            USING ERRCODE = '22008',
            HINT = 'The server clock stepped back further than idfields carries forward (1 s, '
                   'then up to 1 s of waiting). Wait for it to catch up, or start a new '
                   'session (or DISCARD ALL), which claims another node at once; none is '
                   'repeated.';
    END IF;
    RETURN now_tick;
END
$$;

-- Claim step 1: take back the node of this backend's position while it holds the node's
-- advisory lock: its row is ours, lapsed or gone, and the position (intact) continues it. Where
-- the node's durable fence lies past the limit of this backend's own row, it starts at that
-- fence at the earliest (D7: a rollback may have given the position back behind IDs it issued
-- there), and leaves a node fenced past the window to its row's expiry. A wrapping layout
-- always starts at the fence: its position's tick, unwrapped against a clock stepped back past
-- the window, reads as a period behind, not ahead. Lets the lock go unless it claims.
CREATE OR REPLACE FUNCTION idfields.time_take_back_node(
    shape idfields.geometry, key integer, margin bigint, now_tick bigint, now_ms bigint,
    node integer, me text, INOUT tick bigint, OUT claimed integer, OUT promise bigint
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    mine text := '^pg:' || pg_catalog.pg_backend_pid() || ':[0-9]*$';
    found_row boolean;
    durable bigint;
    cand record;
BEGIN
    SELECT l.expires_at_ms, l.holder INTO cand
    FROM @lease_schema@.idfields_node_lease AS l
    WHERE l.layout = shape.lease_key AND l.node = time_take_back_node.node
    FOR UPDATE SKIP LOCKED;
    found_row := FOUND;
    durable := idfields.node_fence_ms(key, node);
    durable := CASE WHEN NOT shape.wraps AND found_row AND cand.holder ~ mine
            AND durable <= cand.expires_at_ms - margin THEN tick
        ELSE (durable * 1000 - shape.epoch_us) / shape.unit_us END;
    IF durable <= now_tick + shape.max_ahead THEN
        tick := GREATEST(tick, durable);
        promise := GREATEST(now_ms + shape.lease_ms,
            (shape.epoch_us + (tick + 2) * shape.unit_us + 999) / 1000 + margin);
    END IF;
    IF durable > now_tick + shape.max_ahead THEN
        NULL;  -- fenced past the window: left to its row's expiry
    ELSIF NOT found_row THEN
        INSERT INTO @lease_schema@.idfields_node_lease
            (id, layout, node, holder, acquired_at_ms, expires_at_ms)
        VALUES (-(key::bigint * 4294967296 + node) - 1, shape.lease_key, node, me, now_ms,
            promise)
        ON CONFLICT ON CONSTRAINT idfields_node_lease_layout_node_uniq DO NOTHING;
        IF FOUND THEN
            claimed := node;
        END IF;
    ELSIF cand.expires_at_ms < now_ms OR cand.holder ~ mine THEN
        UPDATE @lease_schema@.idfields_node_lease AS l
        SET holder = me, acquired_at_ms = now_ms, expires_at_ms = promise
        WHERE l.layout = shape.lease_key AND l.node = time_take_back_node.node;
        claimed := node;
        IF cand.holder !~ mine THEN
            tick := GREATEST(tick,
                (cand.expires_at_ms * 1000 - shape.epoch_us) / shape.unit_us + 1);
        END IF;
    END IF;
    IF claimed IS NULL THEN  -- another holder has it now: let it go
        PERFORM pg_catalog.pg_advisory_unlock(key, node);
    END IF;
END
$$;

-- Claim step 2: a row of the layout's nodes in [first_node, last_node] that this backend's own
-- (its position was lost: DISCARD TEMP/ALL, RESET ALL, a dropped sequence) or lapsed, this
-- backend's own first, then the oldest. Its own row is taken back after the limit its promise
-- gave (the promise less the margin: no one else issued on the node while the row was its own,
-- and it issued nothing past that limit), unless that is further ahead of the clock than the
-- window; its rows are those naming its pid (D3). A lapsed row is fenced after its promise.
-- Every claim starts at or after the node's durable fence too (D7), and skips a node fenced
-- further ahead than the window (counted in fenced). Nodes another backend holds and rows
-- another transaction locked are skipped, not waited on.
CREATE OR REPLACE FUNCTION idfields.time_claim_leased_node(
    shape idfields.geometry, key integer, margin bigint, now_tick bigint, now_ms bigint,
    first_node integer, last_node integer, me text, INOUT tick bigint, INOUT fenced integer,
    OUT claimed integer, OUT promise bigint
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    mine text := '^pg:' || pg_catalog.pg_backend_pid() || ':[0-9]*$';
    mine_prefix text := 'pg:' || pg_catalog.pg_backend_pid() || ':';
    durable bigint;
    cand record;
BEGIN
    FOR cand IN SELECT f.node, f.expires_at_ms, f.own, f.fence FROM (
            SELECT o.node, o.expires_at_ms, o.own, CASE WHEN o.own
                    THEN ((o.expires_at_ms - margin) * 1000 - shape.epoch_us) / shape.unit_us
                    ELSE (o.expires_at_ms * 1000 - shape.epoch_us) / shape.unit_us + 1
                END AS fence
            FROM (SELECT l.node, l.expires_at_ms,
                      pg_catalog.starts_with(l.holder, mine_prefix) AND l.holder ~ mine AS own
                  FROM @lease_schema@.idfields_node_lease AS l
                  WHERE l.layout = shape.lease_key
                    AND l.node BETWEEN first_node AND last_node) AS o
            WHERE o.expires_at_ms < now_ms OR o.own) AS f
        WHERE NOT f.own OR f.fence <= now_tick + shape.max_ahead
        ORDER BY f.own DESC, f.expires_at_ms
    LOOP
        CONTINUE WHEN NOT pg_catalog.pg_try_advisory_lock(key, cand.node);
        SELECT GREATEST(cand.fence,
            (idfields.node_fence_ms(key, cand.node) * 1000 - shape.epoch_us) / shape.unit_us)
        INTO durable FROM @lease_schema@.idfields_node_lease AS l
        WHERE l.layout = shape.lease_key AND l.node = cand.node
          AND l.expires_at_ms = cand.expires_at_ms
          AND (pg_catalog.starts_with(l.holder, mine_prefix) AND l.holder ~ mine) = cand.own
        FOR UPDATE SKIP LOCKED;
        IF FOUND AND durable <= now_tick + shape.max_ahead THEN
            tick := GREATEST(tick, durable);
            promise := GREATEST(now_ms + shape.lease_ms,
                (shape.epoch_us + (tick + 2) * shape.unit_us + 999) / 1000 + margin);
            UPDATE @lease_schema@.idfields_node_lease AS l
            SET holder = me, acquired_at_ms = now_ms, expires_at_ms = promise
            WHERE l.layout = shape.lease_key AND l.node = cand.node;
            claimed := cand.node;
            RETURN;
        END IF;
        fenced := fenced + CASE WHEN FOUND THEN 1 ELSE 0 END;
        PERFORM pg_catalog.pg_advisory_unlock(key, cand.node);
    END LOOP;
END
$$;

-- Claim step 3: a node of [first_node, last_node] no row names yet, at or after its durable
-- fence (D7), skipping (and counting in fenced) one fenced further ahead than the window.
CREATE OR REPLACE FUNCTION idfields.time_claim_new_node(
    shape idfields.geometry, key integer, margin bigint, now_tick bigint, now_ms bigint,
    first_node integer, last_node integer, me text, INOUT tick bigint, INOUT fenced integer,
    OUT claimed integer, OUT promise bigint
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    durable bigint;
    cand record;
BEGIN
    FOR cand IN SELECT s.n AS node
        FROM pg_catalog.generate_series(first_node, last_node) AS s(n)
        WHERE NOT EXISTS (SELECT FROM @lease_schema@.idfields_node_lease AS l
                          WHERE l.layout = shape.lease_key AND l.node = s.n)
    LOOP
        CONTINUE WHEN NOT pg_catalog.pg_try_advisory_lock(key, cand.node);
        durable := (idfields.node_fence_ms(key, cand.node) * 1000 - shape.epoch_us)
            / shape.unit_us;
        IF durable <= now_tick + shape.max_ahead THEN
            tick := GREATEST(tick, durable);
            promise := GREATEST(now_ms + shape.lease_ms,
                (shape.epoch_us + (tick + 2) * shape.unit_us + 999) / 1000 + margin);
            INSERT INTO @lease_schema@.idfields_node_lease
                (id, layout, node, holder, acquired_at_ms, expires_at_ms)
            VALUES (-(key::bigint * 4294967296 + cand.node) - 1, shape.lease_key,
                cand.node, me, now_ms, promise)
            ON CONFLICT ON CONSTRAINT idfields_node_lease_layout_node_uniq DO NOTHING;
        END IF;
        IF durable <= now_tick + shape.max_ahead AND FOUND THEN
            claimed := cand.node;
            RETURN;
        END IF;
        fenced := fenced + CASE WHEN durable > now_tick + shape.max_ahead THEN 1 ELSE 0 END;
        PERFORM pg_catalog.pg_advisory_unlock(key, cand.node);
    END LOOP;
END
$$;

-- Step: claim a node for this backend (its claim was lost, lapsed or taken), acquired at now_ms,
-- inside [first_node, last_node] (the layout's nodes in this database's range): first lets go
-- of the advisory locks it still holds from earlier claims (rolled back, lost, lapsed), but the
-- node its position (last) is on, which it takes back first (an ID issued on a claim rolled back
-- with a savepoint may outlive it, so no other backend may claim that node meanwhile); then a
-- row of its own or a lapsed one; then a node no row names. None free raises (53400). Returns
-- the node, its promise, the holder string and the tick to issue at, after every fence.
CREATE OR REPLACE FUNCTION idfields.time_claim(
    shape idfields.geometry, key integer, margin bigint, now_tick bigint, now_ms bigint,
    last bigint, first_node integer, last_node integer, fenced_until_ms bigint,
    INOUT tick bigint, OUT claimed integer, OUT promise bigint, OUT me text
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    node_mask bigint := 1;
    pos_node integer;
    fenced integer := 0;
    locked bigint;  -- nodes whose advisory lock another session holds
    cand record;
BEGIN
    IF last IS NOT NULL THEN  -- the node of the last ID issued
        WHILE node_mask <= shape.node_max LOOP
            node_mask := node_mask * 2;
        END LOOP;
        pos_node := ((last >> shape.node_shift) & (node_mask - 1))::integer;
    END IF;
    me := idfields.backend_holder();
    LOOP
        SELECT l.objid::integer AS node INTO cand FROM pg_catalog.pg_locks AS l
        WHERE l.locktype = 'advisory' AND l.pid = pg_catalog.pg_backend_pid()
          AND l.classid = key::oid AND l.objsubid = 2
          AND l.objid::integer IS DISTINCT FROM pos_node AND l.database = (
              SELECT d.oid FROM pg_catalog.pg_database AS d
              WHERE d.datname = pg_catalog.current_database())
        LIMIT 1;
        EXIT WHEN NOT FOUND;
        PERFORM pg_catalog.pg_advisory_unlock(key, cand.node);
    END LOOP;
    IF pos_node BETWEEN first_node AND last_node AND EXISTS (
        SELECT FROM pg_catalog.pg_locks AS l
        WHERE l.locktype = 'advisory' AND l.pid = pg_catalog.pg_backend_pid()
          AND l.classid = key::oid AND l.objid::integer = pos_node AND l.objsubid = 2)
    THEN
        SELECT * INTO tick, claimed, promise FROM idfields.time_take_back_node(
            shape, key, margin, now_tick, now_ms, pos_node, me, tick);
    END IF;
    IF claimed IS NULL THEN
        SELECT * INTO tick, fenced, claimed, promise FROM idfields.time_claim_leased_node(
            shape, key, margin, now_tick, now_ms, first_node, last_node, me, tick, fenced);
    END IF;
    IF claimed IS NULL THEN
        SELECT * INTO tick, fenced, claimed, promise FROM idfields.time_claim_new_node(
            shape, key, margin, now_tick, now_ms, first_node, last_node, me, tick, fenced);
    END IF;
    IF first_node > last_node THEN
        RAISE EXCEPTION 'idfields: layout % has no node in this database''s node range',
            shape.layout
            USING ERRCODE = '53400',
            HINT = pg_catalog.format('The layout''s nodes are %s..%s; idfields.node_range() '
                'holds none of them. Install the functions with a range that holds some '
                '(nodes=).', shape.node_min, shape.node_max);
    END IF;
    IF claimed IS NULL THEN  -- each node counted once: fenced, locked without a live row, or held
        SELECT pg_catalog.count(DISTINCT l.objid) INTO locked FROM pg_catalog.pg_locks AS l
        WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_catalog.pg_backend_pid()
          AND l.classid = key::oid AND l.objsubid = 2
          AND l.objid::bigint BETWEEN first_node AND last_node AND l.database = (
              SELECT d.oid FROM pg_catalog.pg_database AS d
              WHERE d.datname = pg_catalog.current_database())
          AND NOT EXISTS (SELECT FROM @lease_schema@.idfields_node_lease AS r
                          WHERE r.layout = shape.lease_key AND r.node = l.objid::bigint
                            AND r.expires_at_ms >= now_ms);
        RAISE EXCEPTION 'idfields: no free % node: % of % are held by live leases, '
            '% are locked by other sessions (advisory locks of class %), % are fenced: '
            'their durable fences (idfields.fence_%_<n>) lie more than % ticks ahead of '
            'the clock', shape.layout, last_node - first_node + 1 - locked - fenced,
            last_node - first_node + 1, locked, key, fenced, key, shape.max_ahead
            USING ERRCODE = '53400',
            HINT = 'See idfields.node_holders for the leases and pg_locks (locktype '
                   '''advisory'', that classid) for the locks. Use fewer connections '
                   'that generate IDs, wait for dead holders'' leases to lapse, end the '
                   'sessions holding stray advisory locks, or choose a layout with more '
                   'node bits. A durable fence lies ahead when a backend ran ahead on a '
                   'node sharing its sequence, or the clock stepped back: IDs resume on '
                   'that node once the clock nears it.';
    END IF;
    -- A range narrowed while this claim waited for the table is seen now (each statement reads
    -- the latest commit): the claim is undone, never kept outside it.
    IF NOT EXISTS (SELECT FROM idfields.node_range() AS r
                   WHERE claimed BETWEEN r.first_node AND r.last_node) THEN
        RAISE EXCEPTION 'idfields: this database''s node range changed while node % '
            'of layout % was claimed', claimed, shape.layout
            USING ERRCODE = '40001',
            HINT = 'A migration changed idfields.node_range(); retry the transaction.';
    END IF;
    -- Fencing: nodes this database was given may have been another database's.
    tick := GREATEST(tick, (fenced_until_ms * 1000 - shape.epoch_us) / shape.unit_us + 1);
END
$$;

-- Step: a temporary sequence of this session's, pg_temp.<name>, made where missing: every role
-- the session may switch to may read it, only the functions' owner writes it (other sessions
-- never reach it). One another role made in its place (before the owner's, or after a DISCARD
-- TEMP dropped it) is refused: IDs issued from it would be of that role's choosing (D9).
CREATE OR REPLACE FUNCTION idfields.session_sequence(name text, layout text) RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    qualified text := pg_catalog.format('pg_temp.%I', name);
    made regclass := pg_catalog.to_regclass(qualified);
    maker text;
BEGIN
    IF made IS NULL THEN
        EXECUTE pg_catalog.format('CREATE TEMPORARY SEQUENCE %s MINVALUE -1 START -1',
            qualified);
        EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE %s TO PUBLIC', qualified);
        RETURN pg_catalog.to_regclass(qualified);
    END IF;
    SELECT pg_catalog.pg_get_userbyid(c.relowner) INTO maker
    FROM pg_catalog.pg_class AS c WHERE c.oid = made;
    IF maker IS DISTINCT FROM current_user THEN
        RAISE EXCEPTION 'idfields: this session''s sequence % of layout % belongs to role %, '
            'not to the role that owns the idfields functions (%)', qualified, layout, maker,
            current_user
            USING ERRCODE = '55000',
            HINT = 'A role in this session made it in place of the functions'' own, and IDs '
                   'issued from it would be of its choosing. Run DISCARD TEMP (or start a new '
                   'session); no ID was issued.';
    END IF;
    RETURN made;
END
$$;

-- Step: this backend's position in a layout (session_sequence), whose value is the last ID it
-- issued (set with setval(), never nextval()), made where missing.
CREATE OR REPLACE FUNCTION idfields.time_sequence(layout text) RETURNS regclass
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT idfields.session_sequence('idfields_' || layout, layout);
END;

-- Step: this backend's window in a layout (D9, session_sequence), whose value is the last ID
-- the hot path may issue (NULL: none), made where missing.
CREATE OR REPLACE FUNCTION idfields.time_window(layout text) RETURNS regclass
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT idfields.session_sequence('idfields:' || layout, layout);
END;

-- Step: this backend's two sequences of a layout, made where missing (time_sequence,
-- time_window), for the hot path to bind when its expression is planned; returns the
-- window. A position made while the window stands was lost (its sequence dropped) somewhere
-- inside the window: it starts at the window's end, past every ID the session may have issued.
CREATE OR REPLACE FUNCTION idfields.time_session(layout text) RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    bound regclass := idfields.time_window(layout);
    issued regclass;
BEGIN
    IF pg_catalog.to_regclass('pg_temp.idfields_' || layout) IS NULL THEN
        issued := idfields.time_sequence(layout);
        PERFORM pg_catalog.setval(issued, pg_catalog.pg_sequence_last_value(bound))
        WHERE pg_catalog.pg_sequence_last_value(bound) IS NOT NULL;
    ELSE
        PERFORM idfields.time_sequence(layout);  -- refused where not the owner's
    END IF;
    RETURN bound;
END
$$;

-- Step: the session's claim of a layout (idfields.<layout>_lease), which holds only if made on
-- this very sequence, on the node of its last ID, with its row unchanged (D4: a stale or forged
-- setting claims afresh). claimed is NULL where none holds; the rest is the setting's.
CREATE OR REPLACE FUNCTION idfields.time_session_claim(
    shape idfields.geometry, seq regclass, last bigint, middle bigint, OUT claimed integer,
    OUT acquired bigint, OUT promise bigint, OUT me text
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    lease text := pg_catalog.current_setting('idfields.' || shape.layout || '_lease', true);
BEGIN
    IF lease IS NOT NULL AND lease <> '' THEN
        claimed := pg_catalog.split_part(lease, ':', 1)::integer;
        acquired := pg_catalog.split_part(lease, ':', 2)::bigint;
        promise := pg_catalog.split_part(lease, ':', 3)::bigint;
        me := 'pg:' || pg_catalog.pg_backend_pid() || ':' || pg_catalog.split_part(lease, ':', 5);
        IF pg_catalog.split_part(lease, ':', 4) <> seq::oid::text OR last IS NULL
            OR last & middle <> (claimed::bigint << shape.node_shift) | shape.fixed
            OR NOT EXISTS (SELECT FROM @lease_schema@.idfields_node_lease AS l
                WHERE l.layout = shape.lease_key AND l.node = claimed AND l.holder = me
                  AND l.acquired_at_ms = acquired AND l.expires_at_ms = promise)
        THEN
            claimed := NULL;
        END IF;
    END IF;
END
$$;

-- Step: past the claim's limit (the promise less the margin), renew its row while it is still
-- this backend's and unexpired (the clock read as the row is, after any wait for a lock), else
-- claim a node (time_claim) inside the database's range, after the position. Returns the claim
-- and the tick to issue at.
CREATE OR REPLACE FUNCTION idfields.time_renew(
    shape idfields.geometry, key integer, margin bigint, now_tick bigint, now_ms bigint,
    called_ms bigint, last bigint, pos_tick bigint, INOUT tick bigint, INOUT claimed integer,
    INOUT acquired bigint, INOUT promise bigint, INOUT me text
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    first_node integer; last_node integer; fenced_until_ms bigint;  -- the database's range
    grace bigint;  -- the end of the grace of the database's epoch
BEGIN
    promise := GREATEST(now_ms + shape.lease_ms,
        (shape.epoch_us + (tick + 2) * shape.unit_us + 999) / 1000 + margin);
    SELECT GREATEST(shape.node_min, r.first_node), LEAST(shape.node_max, r.last_node),
        r.fenced_until_ms
    INTO first_node, last_node, fenced_until_ms FROM idfields.node_range() AS r;
    IF claimed IS NOT NULL THEN
        UPDATE @lease_schema@.idfields_node_lease AS l SET expires_at_ms = promise
        WHERE l.layout = shape.lease_key AND l.node = claimed
          AND l.holder = me AND l.acquired_at_ms = acquired
          AND l.expires_at_ms >= now_ms + idfields.clock_ms() - called_ms
          AND l.node BETWEEN first_node AND last_node;
        claimed := CASE WHEN FOUND THEN claimed END;  -- lapsed, or an app process took it
    END IF;
    IF claimed IS NULL THEN  -- a new claim starts after the position: it continues nothing
        -- L11: none while the grace of the database's epoch lasts, and none before its end.
        -- The backend's IDs run at most max_ahead ticks, and the tick, past its clock.
        SELECT e.until_ms INTO grace
        FROM idfields.database_epoch((shape.max_ahead + 1) * shape.unit_us / 1000) AS e;
        IF now_ms < grace THEN
            RAISE EXCEPTION 'idfields: the coordination database restarted or changed and may '
                'have lost its last lease claims, so no % node is claimed until % (unix ms, % s '
                'from now)', shape.layout, grace, ((grace - now_ms) / 1000.0)::numeric(12, 1)
                USING ERRCODE = '57P03',
                HINT = 'Live processes may still issue on leases the database forgot (after a '
                       'crash, a restored snapshot, a failover, a restore or a copy): retry '
                       'once the longest lease ttl (at least the lease ttl ceiling) and a '
                       'second have passed since. Shorter lease ttls under a lower ceiling '
                       'shorten the wait. A refusal rolls back the new epoch it recorded: '
                       'where only database sessions claim, record it once in a transaction '
                       'of its own (SELECT idfields.database_epoch(0)), or the wait starts '
                       'again at each refusal (docs/how-to/high-availability.md).';
        END IF;
        acquired := now_ms;
        SELECT * INTO tick, claimed, promise, me FROM idfields.time_claim(shape, key,
            margin, now_tick, now_ms, last, first_node, last_node, fenced_until_ms,
            GREATEST(tick, pos_tick + 1, (grace * 1000 - shape.epoch_us) / shape.unit_us + 1));
    END IF;
END
$$;

-- Step: before an ID at tick goes out, raise the node's durable fence over this tick and every
-- tick the backend may go on to without the slow path (D7: up to the limit for a growing
-- layout), then record the claim and its limit together (a rollback reverts both with the lease
-- row) and the window the hot path issues inside, which never reaches past the fence
-- (D9: the limit's last tick for a growing layout, this tick for a wrapping one; a sequence,
-- which a rollback keeps, as it keeps the fence).
CREATE OR REPLACE FUNCTION idfields.time_record_claim(
    shape idfields.geometry, seq regclass, key integer, margin bigint, tick bigint,
    claimed integer, acquired bigint, promise bigint, me text
) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    period bigint := 1::bigint << shape.ts_bits;
    lim bigint := LEAST(((promise - margin) * 1000 - shape.epoch_us) / shape.unit_us - 1,
        CASE WHEN NOT shape.wraps THEN period - 2 END);
BEGIN
    PERFORM idfields.raise_node_fence(key, claimed, GREATEST(
        CASE WHEN NOT shape.wraps THEN promise - margin END,
        (shape.epoch_us + (tick + 1) * shape.unit_us + 999) / 1000));
    PERFORM pg_catalog.set_config('idfields.' || shape.layout || '_lease',
        claimed || ':' || acquired || ':' || promise || ':' || seq::oid || ':'
        || pg_catalog.split_part(me, ':', 3) || ':'
        || '@lease_schema@.idfields_node_lease'::regclass::oid, false);
    PERFORM pg_catalog.set_config('idfields.' || shape.layout || '_limit', lim::text, false);
    PERFORM pg_catalog.setval(idfields.time_window(shape.layout),
        ((CASE WHEN shape.wraps THEN tick % period ELSE lim END) << shape.ts_shift)
        | (claimed::bigint << shape.node_shift) | shape.fixed
        | ((1::bigint << shape.seq_bits) - 1));
END
$$;

-- The slow path of the time-based generators, in steps: refuse what the session may not do
-- (time_refuse), find the position and the session's claim (time_sequence, time_session_claim),
-- wait for a clock behind the position (time_wait_for_clock), renew the claim or claim a node
-- past its limit (time_renew, time_claim), raise the node's durable fence and record the claim
-- and its limit (time_record_claim), issue. Its rules, and the settings it keeps, are in
-- docs/explanation/lease-protocol-database.md.
CREATE OR REPLACE FUNCTION idfields.time_slow_path(
    shape idfields.geometry, now_tick bigint, visible_lease regclass
) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    seq regclass;
    key integer := idfields.lease_lock_key(shape.lease_key);
    period bigint := 1::bigint << shape.ts_bits;
    seq_mask bigint := (1::bigint << shape.seq_bits) - 1;
    -- The bits of an ID that are neither timestamp nor sequence: node and constants.
    middle bigint := 9223372036854775807 # ((period - 1) << shape.ts_shift) # seq_mask;
    -- The promise less the limit: the limit leads the clock by an eighth of a lease (two
    -- ticks at least), so the backend renews that often.
    margin bigint := shape.lease_ms - GREATEST(shape.lease_ms / 8, shape.unit_us / 500);
    called_ms bigint := idfields.clock_ms();  -- now_ms moves with the clock where it must
    now_ms bigint; tick bigint; durable bigint; continues boolean;
    last bigint; pos bigint; pos_tick bigint;  -- the last ID, the one after, and its tick
    claimed integer; acquired bigint; promise bigint; me text;  -- the claim
BEGIN
    IF pg_catalog.pg_is_in_recovery() OR pg_catalog.current_setting('transaction_read_only') = 'on'
        OR NOT (shape.lease_key = shape.layout OR (shape.layout NOT IN ('snowflake', 'traceid')
            AND pg_catalog.starts_with(shape.lease_key, pg_catalog.left(shape.layout, 51) || '#')))
        OR visible_lease <> '@lease_schema@.idfields_node_lease'::regclass
    THEN
        PERFORM idfields.time_refuse(shape.layout, shape.lease_key, visible_lease);
    END IF;
    PERFORM idfields.commit_durably();
    seq := idfields.time_sequence(shape.layout);
    last := pg_catalog.pg_sequence_last_value(seq);
    SELECT * INTO claimed, acquired, promise, me
    FROM idfields.time_session_claim(shape, seq, last, middle);
    -- The position: the ID after the last, its tick unwrapped against the clock (ahead by
    -- max_ahead + 1 at most, else behind); a new sequence has none.
    pos := CASE WHEN last IS NULL THEN -1 ELSE last + 1 END;
    pos_tick := CASE WHEN last IS NULL THEN now_tick - 1
        ELSE (last >> shape.ts_shift) & (period - 1) END;
    IF shape.wraps AND last IS NOT NULL THEN
        pos_tick := ((pos_tick - now_tick) % period + period) % period;
        pos_tick := now_tick + pos_tick
            - CASE WHEN pos_tick > shape.max_ahead + 1 THEN period ELSE 0 END;
    END IF;
    continues := pos > 0 AND pos & middle = (claimed::bigint << shape.node_shift) | shape.fixed
        AND pos & seq_mask > shape.seq_min;
    tick := GREATEST(now_tick, pos_tick + CASE WHEN continues THEN 0 ELSE 1 END);
    IF tick > now_tick + shape.max_ahead THEN
        now_tick := idfields.time_wait_for_clock(shape.layout, tick, now_tick, shape.unit_us,
            shape.max_ahead);
    END IF;
    now_ms := (shape.epoch_us + now_tick * shape.unit_us) / 1000;
    IF NOT shape.wraps AND tick >= period THEN
        RAISE EXCEPTION 'idfields: layout % ran out of timestamps (% bits)', shape.layout,
            shape.ts_bits
            USING ERRCODE = '22003',
            HINT = 'No ID was issued. Move the column to a layout with a later epoch or a wider '
                   'timestamp.';
    END IF;
    -- D7: a renewal, or a wrapping layout's new tick, starts at the node's durable fence at the
    -- earliest; a fence past the window leaves the node to its row's expiry.
    IF claimed IS NOT NULL AND (shape.wraps AND tick <> pos_tick
        OR shape.epoch_us + (tick + 1) * shape.unit_us > (promise - margin) * 1000)
    THEN
        durable := (idfields.node_fence_ms(key, claimed) * 1000 - shape.epoch_us) / shape.unit_us;
        IF durable > now_tick + shape.max_ahead THEN
            claimed := NULL;
        ELSE
            tick := GREATEST(tick, durable);
        END IF;
    END IF;
    IF claimed IS NULL OR shape.epoch_us + (tick + 1) * shape.unit_us > (promise - margin) * 1000
    THEN
        SELECT * INTO tick, claimed, acquired, promise, me FROM idfields.time_renew(shape, key,
            margin, now_tick, now_ms, called_ms, last, pos_tick, tick, claimed, acquired,
            promise, me);
    END IF;
    PERFORM idfields.time_record_claim(shape, seq, key, margin, tick, claimed, acquired,
        promise, me);
    IF continues AND tick = pos_tick THEN
        RETURN pg_catalog.setval(seq, pos);
    END IF;
    RETURN pg_catalog.setval(seq, ((CASE WHEN shape.wraps THEN tick % period ELSE tick END)
        << shape.ts_shift) | (claimed::bigint << shape.node_shift) | shape.fixed | shape.seq_min);
END
$$;

-- n IDs of a time-based layout at once, as one (first_id, last_id) row per tick: the slow path
-- validates a tick (claim, lease, clock) and returns its next ID; the rest of that tick's
-- sequence is taken in one setval(). The same IDs, in the same order, as n calls of
-- next_<layout>(); about one slow-path call per tick.
CREATE OR REPLACE FUNCTION idfields.take_id_ranges(
    shape idfields.geometry, n bigint, visible_lease regclass, OUT first_id bigint,
    OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250
AS $$
DECLARE
    seq_mask bigint := (1::bigint << shape.seq_bits) - 1;
    left_over bigint := n;
BEGIN
    IF n IS NULL OR n < 0 THEN
        RAISE EXCEPTION 'idfields: take_%(n) and take_%_ranges(n) need n >= 0, got %', shape.layout,
            shape.layout, n
            USING ERRCODE = '22023', HINT = 'Pass the number of IDs wanted.';
    END IF;
    WHILE left_over > 0 LOOP
        first_id := idfields.time_slow_path(shape,
            (idfields.clock_us() - shape.epoch_us) / shape.unit_us, visible_lease);
        last_id := first_id + LEAST(left_over, seq_mask - (first_id & seq_mask) + 1) - 1;
        IF last_id > first_id THEN
            PERFORM pg_catalog.setval(
                pg_catalog.to_regclass('pg_temp.idfields_' || shape.layout), last_id);
        END IF;
        RETURN NEXT;
        left_over := left_over - (last_id - first_id + 1);
    END LOOP;
END
$$;

-- Everything but the hot path, for every layout: the session holds no window of the
-- layout yet, its window ends (a renewal; a wrapping layout's new tick), or the hot path could
-- not go on inside it (a layout whose sequence starts above 0 running ahead of the clock, a
-- wrapping one in the tick after the clock's, a position the calling role moved). Goes on inside
-- the window where only the hot path could not, else takes the slow path. The window is the
-- owner's (time_window), the settings are not read here (D9). A function of its own, so the
-- hot path's expression neither plans nor sets up these branches, and its plans are cached for
-- the session. COST 1: it runs about once a tick, not once a row, so a bulk INSERT is not
-- costed (and JIT-compiled) as if it ran per row. top: the constant bits above the timestamp;
-- now_tick NULL: the clock's.
CREATE OR REPLACE FUNCTION idfields.time_next(
    shape idfields.geometry, now_tick bigint, visible_lease regclass, top bigint
) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1
AS $$
DECLARE
    seq regclass := pg_catalog.to_regclass('pg_temp.idfields_' || shape.layout);
    bound bigint;
    seq_mask bigint := (1::bigint << shape.seq_bits) - 1;
    period_mask bigint := (1::bigint << shape.ts_bits) - 1;
    -- The bits between the timestamp and the sequence: the node and constants.
    middle bigint := ((1::bigint << shape.ts_shift) - 1) # seq_mask;
    last bigint;
    next_id bigint;
BEGIN
    now_tick := COALESCE(now_tick, (idfields.clock_us() - shape.epoch_us) / shape.unit_us);
    IF seq IS NOT NULL AND (visible_lease IS NULL
        OR visible_lease = '@lease_schema@.idfields_node_lease'::regclass)
    THEN
        bound := pg_catalog.pg_sequence_last_value(idfields.time_window(shape.layout));
        seq := idfields.time_sequence(shape.layout);  -- refused where not the owner's
        last := pg_catalog.pg_sequence_last_value(seq);
    END IF;
    IF bound IS NOT NULL THEN
        -- A position past the window, or off its node, was not issued inside it: the calling
        -- role moved it. Go on after the window's end, past anything the session issued.
        IF last IS NULL OR last > bound OR (last # bound) & middle <> 0 THEN
            last := pg_catalog.setval(seq, bound);
        END IF;
        next_id := (((last | middle) + 1) & ~middle) | (bound & middle);
        IF shape.wraps THEN
            -- On in the window's tick, while that is the clock's or the next (modulo the
            -- period); each new tick takes the slow path (D7).
            next_id := GREATEST(next_id, (bound & ~seq_mask) | shape.seq_min);
            IF next_id <= bound AND ((bound >> shape.ts_shift) - now_tick) & period_mask <= 1
            THEN
                RETURN pg_catalog.setval(seq, next_id);
            END IF;
        ELSE
            -- A growing layout moves to the clock's tick, or runs ahead of it, inside the
            -- window: no tick past the limit (D1), none further ahead than max_ahead.
            next_id := GREATEST(next_id, (now_tick << shape.ts_shift) | top | (bound & middle));
            next_id := GREATEST(next_id, (next_id & ~seq_mask) | shape.seq_min);
            IF next_id <= bound
                AND (next_id >> shape.ts_shift) & period_mask <= now_tick + shape.max_ahead
            THEN
                RETURN pg_catalog.setval(seq, next_id);
            END IF;
        END IF;
    END IF;
    RETURN idfields.time_slow_path(shape, now_tick, visible_lease);
END
$$;

-- snowflake (41-bit ms since 2024-01-01 | 10-bit node | 12-bit sequence) and traceid (25-bit
-- unix seconds mod 2^25 | 16-bit node_no | 22-bit counter >= 1): their issuers, hot paths and
-- bulk forms, as idfields.sql.layouts renders them from idfields/sql/templates/layout.sql, the
-- template of user layouts.
-- BEGIN built-in layouts, as idfields.sql.layouts renders them
-- The layout's durable fences (D7), idfields.fence_<lease_lock_key(lease key)>_<node % 1024>.
DO $fences$
BEGIN
    FOR node IN 0..1023 LOOP
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS idfields.%I MINVALUE 0 START 0',
            'fence_1311434018_' || node % 1024);
        EXECUTE pg_catalog.format('REVOKE ALL ON SEQUENCE idfields.%I FROM PUBLIC',
            'fence_1311434018_' || node % 1024);
        EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE idfields.%I TO PUBLIC',
            'fence_1311434018_' || node % 1024);
    END LOOP;
END
$fences$;

CREATE OR REPLACE FUNCTION idfields."issue_snowflake"(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(ROW('snowflake', 'snowflake', 1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000)::idfields.geometry, (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) - 1704067200000), visible_lease, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_snowflake_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(ROW('snowflake', 'snowflake', 1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000)::idfields.geometry, COALESCE(now_tick, (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) - 1704067200000)), visible_lease, 0);
END
$$;
REVOKE ALL ON FUNCTION idfields."issue_snowflake_at"(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."issue_snowflake_ranges"(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges(ROW('snowflake', 'snowflake', 1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000)::idfields.geometry, n, visible_lease) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields."open_snowflake"() RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_session('snowflake');
END
$$;

-- The two bindings of the hot path. The planner evaluates them (IMMUTABLE, no argument) when
-- PL/pgSQL plans next_<name>()'s expression, once a session: the plan holds the session's
-- window and position as constants, which dropping them (DISCARD TEMP) plans again, as a
-- changed search_path does; the window first, which makes the two where they are missing and
-- refuses either where another role made it (open_<name>()). They run as the owner under the
-- caller's search_path, for the lease table that path finds: so no SET clause, and every name
-- and operator in them qualified. Where the session may hold no window (a standby, another
-- lease table on the caller's search_path, a read-only transaction before the session made
-- the sequences) the issuer's refusal is raised here, so no plan holds none.
CREATE OR REPLACE FUNCTION idfields."window_snowflake"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    IF pg_catalog.pg_is_in_recovery() OR NOT COALESCE(pg_catalog.oideq(
            pg_catalog.to_regclass('idfields_node_lease')::pg_catalog.oid,
            idfields.lease_table()::pg_catalog.oid), true)
        OR (pg_catalog.to_regclass('pg_temp."idfields:snowflake"') IS NULL
            OR pg_catalog.to_regclass('pg_temp."idfields_snowflake"') IS NULL)
        AND pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'on'
    THEN
        PERFORM idfields."issue_snowflake"(pg_catalog.to_regclass('idfields_node_lease'));
        RETURN NULL;
    END IF;
    RETURN idfields."open_snowflake"();
END
$$;

CREATE OR REPLACE FUNCTION idfields."position_snowflake"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    PERFORM idfields."open_snowflake"();
    RETURN pg_catalog.to_regclass('pg_temp."idfields_snowflake"');
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_snowflake_at_on"(bound regclass, issued regclass, now_tick bigint)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '4190208'::bigint) + 1) & '-4190209'::bigint),
            (now_tick << 22)) | (pg_catalog.pg_sequence_last_value(bound) & '4190208'::bigint),
        pg_catalog.pg_sequence_last_value(bound)),
        pg_catalog.pg_sequence_last_value(bound))),
        idfields."issue_snowflake_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_snowflake_at_on"(regclass, regclass, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_snowflake_at"(now_tick bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_snowflake_at_on"(idfields."window_snowflake"(), idfields."position_snowflake"(), now_tick);
END
$$;
REVOKE ALL ON FUNCTION idfields."next_snowflake_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_snowflake_on"(bound regclass, issued regclass) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '4190208'::bigint) + 1) & '-4190209'::bigint),
            ((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) - 1704067200000) << 22)) | (pg_catalog.pg_sequence_last_value(bound) & '4190208'::bigint),
        pg_catalog.pg_sequence_last_value(bound)),
        pg_catalog.pg_sequence_last_value(bound))),
        idfields."issue_snowflake"(pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_snowflake_on"(regclass, regclass) FROM PUBLIC;

-- COST 1: a bulk INSERT is not costed (and JIT-compiled) as if each row ran a statement.
CREATE OR REPLACE FUNCTION idfields."next_snowflake"() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_snowflake_on"(idfields."window_snowflake"(), idfields."position_snowflake"());
END
$$;

CREATE OR REPLACE FUNCTION idfields."take_snowflake"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields."issue_snowflake_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."take_snowflake_ranges"(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields."issue_snowflake_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

-- The layout's durable fences (D7), idfields.fence_<lease_lock_key(lease key)>_<node % 1024>.
DO $fences$
BEGIN
    FOR node IN 0..1023 LOOP
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS idfields.%I MINVALUE 0 START 0',
            'fence_1705534813_' || node % 1024);
        EXECUTE pg_catalog.format('REVOKE ALL ON SEQUENCE idfields.%I FROM PUBLIC',
            'fence_1705534813_' || node % 1024);
        EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE idfields.%I TO PUBLIC',
            'fence_1705534813_' || node % 1024);
    END LOOP;
END
$fences$;

CREATE OR REPLACE FUNCTION idfields."issue_traceid"(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(ROW('traceid', 'traceid', 0, 1000000, 25, 38, true, 22, 0, 65535, 22, 1, 0, 1, 5000)::idfields.geometry, (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) / 1000), visible_lease, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_traceid_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(ROW('traceid', 'traceid', 0, 1000000, 25, 38, true, 22, 0, 65535, 22, 1, 0, 1, 5000)::idfields.geometry, COALESCE(now_tick, (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) / 1000)), visible_lease, 0);
END
$$;
REVOKE ALL ON FUNCTION idfields."issue_traceid_at"(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."issue_traceid_ranges"(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges(ROW('traceid', 'traceid', 0, 1000000, 25, 38, true, 22, 0, 65535, 22, 1, 0, 1, 5000)::idfields.geometry, n, visible_lease) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields."open_traceid"() RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_session('traceid');
END
$$;

-- The two bindings of the hot path. The planner evaluates them (IMMUTABLE, no argument) when
-- PL/pgSQL plans next_<name>()'s expression, once a session: the plan holds the session's
-- window and position as constants, which dropping them (DISCARD TEMP) plans again, as a
-- changed search_path does; the window first, which makes the two where they are missing and
-- refuses either where another role made it (open_<name>()). They run as the owner under the
-- caller's search_path, for the lease table that path finds: so no SET clause, and every name
-- and operator in them qualified. Where the session may hold no window (a standby, another
-- lease table on the caller's search_path, a read-only transaction before the session made
-- the sequences) the issuer's refusal is raised here, so no plan holds none.
CREATE OR REPLACE FUNCTION idfields."window_traceid"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    IF pg_catalog.pg_is_in_recovery() OR NOT COALESCE(pg_catalog.oideq(
            pg_catalog.to_regclass('idfields_node_lease')::pg_catalog.oid,
            idfields.lease_table()::pg_catalog.oid), true)
        OR (pg_catalog.to_regclass('pg_temp."idfields:traceid"') IS NULL
            OR pg_catalog.to_regclass('pg_temp."idfields_traceid"') IS NULL)
        AND pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'on'
    THEN
        PERFORM idfields."issue_traceid"(pg_catalog.to_regclass('idfields_node_lease'));
        RETURN NULL;
    END IF;
    RETURN idfields."open_traceid"();
END
$$;

CREATE OR REPLACE FUNCTION idfields."position_traceid"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    PERFORM idfields."open_traceid"();
    RETURN pg_catalog.to_regclass('pg_temp."idfields_traceid"');
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_traceid_at_on"(bound regclass, issued regclass, now_tick bigint)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, CASE WHEN ((pg_catalog.pg_sequence_last_value(bound) >> 38) - now_tick)
            & '33554431'::bigint <= 1
        THEN NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '274873712640'::bigint) + 1) & '-274873712641'::bigint),
            (pg_catalog.pg_sequence_last_value(bound) & '-274877906944'::bigint) | '1'::bigint)
            | (pg_catalog.pg_sequence_last_value(bound) & '274873712640'::bigint),
            pg_catalog.pg_sequence_last_value(bound)),
            pg_catalog.pg_sequence_last_value(bound)) END),
        idfields."issue_traceid_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_traceid_at_on"(regclass, regclass, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_traceid_at"(now_tick bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_traceid_at_on"(idfields."window_traceid"(), idfields."position_traceid"(), now_tick);
END
$$;
REVOKE ALL ON FUNCTION idfields."next_traceid_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_traceid_on"(bound regclass, issued regclass) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, CASE WHEN ((pg_catalog.pg_sequence_last_value(bound) >> 38) - (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) / 1000))
            & '33554431'::bigint <= 1
        THEN NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '274873712640'::bigint) + 1) & '-274873712641'::bigint),
            (pg_catalog.pg_sequence_last_value(bound) & '-274877906944'::bigint) | '1'::bigint)
            | (pg_catalog.pg_sequence_last_value(bound) & '274873712640'::bigint),
            pg_catalog.pg_sequence_last_value(bound)),
            pg_catalog.pg_sequence_last_value(bound)) END),
        idfields."issue_traceid"(pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_traceid_on"(regclass, regclass) FROM PUBLIC;

-- COST 1: a bulk INSERT is not costed (and JIT-compiled) as if each row ran a statement.
CREATE OR REPLACE FUNCTION idfields."next_traceid"() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_traceid_on"(idfields."window_traceid"(), idfields."position_traceid"());
END
$$;

CREATE OR REPLACE FUNCTION idfields."take_traceid"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields."issue_traceid_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."take_traceid_ranges"(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields."issue_traceid_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

-- END built-in layouts
-- Bulk: INSERT INTO t (id, ...) SELECT id, ... FROM idfields.take_snowflake(n) AS id, or as
-- ranges: INSERT INTO t (id, ...) SELECT id, ... FROM idfields.take_snowflake_ranges(n) AS r,
-- pg_catalog.generate_series(r.first_id, r.last_id) AS id.

-- The database side's decimal allocator (invariant D8 of
-- docs/explanation/lease-protocol-database.md): a permanent sequence, owned by the installing
-- role; everyone may read it (SELECT: no nextval(), no setval()), only the owner
-- (decimal_slow_path()) writes it. Its value is (launch_id * 1000000 + taken) * 100000 + block:
-- the database side issues under one generator id at a time, the one it took as value 'taken'
-- of counter row 'generator:<launch>' (generator_id = taken - 1, as the app's DecimalSource
-- maps it), and each backend takes a block of 10,000 counters of it by nextval(): block b
-- holds counters (b - 1) * 10000 + 1 .. b * 10000, blocks 1..92233 (counter <= 922330000). Its
-- value only grows, and nextval() and setval() are undone by neither ROLLBACK nor DISCARD nor
-- the backend's exit: no block is handed out twice, and a generator id whose counter row
-- increment a rollback undid stays recorded here; every claim, of a backend or an app process,
-- takes a value above it in its launch.
CREATE SEQUENCE IF NOT EXISTS idfields.decimal_issued MINVALUE 0 START 0;
REVOKE ALL ON SEQUENCE idfields.decimal_issued FROM PUBLIC;
GRANT SELECT ON SEQUENCE idfields.decimal_issued TO PUBLIC;

-- Step: the allocator's generator id is of an older launch than the newest, and this
-- transaction wrote no counter row yet: move to the newest (false) once the old launch's counter
-- row, as committed by another transaction, covers the generator id (a claim of an older launch
-- then needs no allocator: D8); until then go on with it (true), and cover it in this
-- transaction.
CREATE OR REPLACE FUNCTION idfields.decimal_cover_generator(
    issued_launch integer, issued_taken bigint
) RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    covered bigint;
BEGIN
    SELECT c.value INTO covered FROM @lease_schema@.idfields_counter AS c
    WHERE c.name = 'generator:' || issued_launch;
    IF COALESCE(covered, 0) >= issued_taken THEN
        RETURN false;
    ELSIF covered IS NULL THEN
        INSERT INTO @lease_schema@.idfields_counter (name, value)
        VALUES ('generator:' || issued_launch, issued_taken)
        ON CONFLICT (name) DO NOTHING;
        PERFORM pg_catalog.set_config('idfields.decimal_claimed', 'on', true);
    ELSE  -- never waits: a row another transaction holds is covered by a later call
        UPDATE @lease_schema@.idfields_counter AS c
        SET value = GREATEST(c.value, issued_taken)
        WHERE c.name IN (SELECT d.name FROM @lease_schema@.idfields_counter AS d
                         WHERE d.name = 'generator:' || issued_launch
                         FOR UPDATE SKIP LOCKED);
        PERFORM pg_catalog.set_config('idfields.decimal_claimed', 'on', true);
    END IF;
    RETURN true;
END
$$;

-- Step: take a new generator id, under the allocator's lock, in the newest launch; in the
-- allocator's launch (issued_launch, its value issued_taken) where this transaction wrote a
-- counter row or that launch's row does not cover the allocator's generator id yet. Moves the
-- allocator to the new id's first block; returns the launch and its counter value taken
-- (generator id + 1).
CREATE OR REPLACE FUNCTION idfields.decimal_take_generator(
    newest integer, issued_launch integer, issued_taken bigint, OUT launch integer,
    OUT taken bigint
)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    counter_name text;
BEGIN
    IF newest IS NULL AND issued_launch = 0 THEN
        RAISE EXCEPTION 'idfields: no launch is recorded, and DecimalId needs one'
            USING ERRCODE = '55000',
            HINT = 'Record a launch once per deployment: manage.py idfields_launch --label '
                   '<version> (or idfields.coordination.counters.record_launch()).';
    END IF;
    launch := GREATEST(newest, issued_launch);
    IF launch > issued_launch AND issued_taken > 0 AND (pg_catalog.current_setting(
            'idfields.decimal_claimed', true) = 'on'
            OR COALESCE((SELECT c.value FROM @lease_schema@.idfields_counter AS c
                         WHERE c.name = 'generator:' || issued_launch), 0)
               < issued_taken) THEN
        launch := issued_launch;
    END IF;
    counter_name := 'generator:' || launch;
    INSERT INTO @lease_schema@.idfields_counter (name, value) VALUES (counter_name, 0)
    ON CONFLICT (name) DO NOTHING;
    UPDATE @lease_schema@.idfields_counter AS c
    SET value = GREATEST(c.value,
        CASE WHEN launch = issued_launch THEN issued_taken ELSE 0 END) + 1
    WHERE c.name = counter_name RETURNING c.value INTO taken;
    IF taken > 100000 THEN
        RAISE EXCEPTION 'idfields: launch % has used all 100,000 DecimalId generator ids',
            launch
            USING ERRCODE = '53400',
            HINT = 'Record a new launch (manage.py idfields_launch --label <version>).';
    END IF;
    PERFORM pg_catalog.set_config('idfields.decimal_claimed', 'on', true);
    PERFORM pg_catalog.setval('idfields.decimal_issued',
        (launch::bigint * 1000000 + taken) * 100000 + 1);
END
$$;

-- decimal: counter * 10^10 + generator_id * 10^5 + launch_id. The session's position,
-- pg_temp.idfields_decimal (session_sequence: only the owner writes it), holds the backend's
-- last ID, inside its block; 'idfields.decimal_generator' (session) = generator_id * 10^5 +
-- launch_id of its block, which a rollback of the block's claim takes back;
-- 'idfields.decimal_claimed' (transaction-local) = 'on' once this transaction wrote a counter
-- row. Called for a transaction's first ID that cannot go on (a new, reset or read-only
-- session) and at the end of a block. In steps: refuse what the session may not do, take a
-- block of the allocator's generator id, covering it where a newer launch is recorded
-- (decimal_cover_generator), or, where none is usable, a new generator id
-- (decimal_take_generator); issue the block's first ID.
CREATE OR REPLACE FUNCTION idfields.decimal_slow_path() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    seq regclass;
    newest integer;
    issued bigint;
    issued_launch integer;
    issued_taken bigint;
    block bigint;
    usable boolean;
    generator bigint;
    moved integer;  -- the launch recorded at the database's last change of epoch
BEGIN
    IF pg_catalog.pg_is_in_recovery() THEN
        RAISE EXCEPTION 'idfields: cannot issue decimal IDs on a hot standby'
            USING ERRCODE = '25006',
            HINT = 'A standby cannot claim a generator id. Call idfields.next_decimal() on '
                   'the primary, or generate the IDs app-side beside a replica.';
    END IF;
    PERFORM idfields.commit_durably();
    IF pg_catalog.current_setting('transaction_read_only') = 'on' THEN
        RAISE EXCEPTION 'idfields: cannot issue decimal IDs in a read-only transaction'
            USING ERRCODE = '25006',
            HINT = 'Call idfields.next_decimal() in a read-write transaction, or generate '
                   'the IDs app-side.';
    END IF;
    seq := idfields.session_sequence('idfields_decimal', 'decimal');
    -- L11: after a change of the database's epoch, a generator id of the launch recorded then
    -- (none while another session records it).
    IF NOT (SELECT e.settled FROM idfields.database_epoch(0) AS e) THEN
        RAISE EXCEPTION 'idfields: the coordination database restarted or changed, and another '
            'session is recording the new launch for DecimalId'
            USING ERRCODE = '57P03',
            HINT = 'Retry once that session''s transaction has ended; no ID was issued.';
    END IF;
    SELECT max(l.id), COALESCE(max(l.id) FILTER (
            WHERE l.label LIKE 'idfields: coordination database changed%'), 0)
    INTO newest, moved FROM @lease_schema@.idfields_launch AS l;
    LOOP
        issued := pg_catalog.nextval('idfields.decimal_issued');
        issued_launch := issued / 100000000000;
        issued_taken := issued / 100000 % 1000000;
        block := issued % 100000;
        usable := issued_taken > 0 AND block <= 92233 AND issued_launch >= moved;
        IF usable AND newest > issued_launch AND pg_catalog.current_setting(
                'idfields.decimal_claimed', true) IS DISTINCT FROM 'on' THEN
            usable := idfields.decimal_cover_generator(issued_launch, issued_taken);
        END IF;
        EXIT WHEN usable;
        -- One claim at a time (the lock is held to the end of the transaction, as the counter
        -- row's is); a claim that got here first moved the allocator already: take a block of
        -- its generator id.
        PERFORM pg_catalog.pg_advisory_xact_lock(625490655, 0);
        CONTINUE WHEN COALESCE(pg_catalog.pg_sequence_last_value('idfields.decimal_issued'), 0)
            / 100000 <> issued / 100000;
        IF issued_launch < moved THEN  -- the allocator's state may be what the database lost
            issued_launch := 0;
            issued_taken := 0;
        END IF;
        SELECT * INTO issued_launch, issued_taken
        FROM idfields.decimal_take_generator(newest, issued_launch, issued_taken);
        block := 1;
        EXIT;
    END LOOP;
    generator := issued_taken - 1;
    PERFORM pg_catalog.set_config('idfields.decimal_generator',
        (generator * 100000 + issued_launch)::text, false);
    RETURN pg_catalog.setval(seq,
        ((block - 1) * 10000 + 1) * 10000000000 + generator * 100000 + issued_launch);
END
$$;

-- The binding of the decimal hot path: the session's position, made where missing and refused
-- where another role made it (session_sequence), evaluated by the planner (IMMUTABLE, no
-- argument) when PL/pgSQL plans next_decimal()'s expressions, once a session: the plans hold
-- it as a constant, which dropping it (DISCARD TEMP) plans again. Where the session cannot
-- make it (a standby, a read-only transaction) the slow path's refusal is raised here, so no
-- plan holds none.
CREATE OR REPLACE FUNCTION idfields.decimal_position() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_catalog.to_regclass('pg_temp.idfields_decimal') IS NULL
        AND (pg_catalog.pg_is_in_recovery()
             OR pg_catalog.current_setting('transaction_read_only') = 'on')
    THEN
        PERFORM idfields.decimal_slow_path();
        RETURN NULL;
    END IF;
    RETURN idfields.session_sequence('idfields_decimal', 'decimal');
END
$$;
REVOKE ALL ON FUNCTION idfields.decimal_position() FROM PUBLIC;

-- The decimal hot path: the position's next counter while it stays inside the block and the
-- session's generator id, in a transaction that may write; else decimal_slow_path(). Run as
-- the owner, who alone writes the position (no SET clause, which would cost every call: every
-- name and operator in it is qualified). COST 1: a bulk INSERT is not costed (and
-- JIT-compiled) as if each row ran a statement.
CREATE OR REPLACE FUNCTION idfields.next_decimal() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
DECLARE
    last bigint := pg_catalog.pg_sequence_last_value(idfields.decimal_position());
BEGIN
    IF pg_catalog.int8mod(pg_catalog.int8div(last, 10000000000), 10000) OPERATOR(pg_catalog.<>) 0
        AND pg_catalog.int8mod(last, 10000000000)::pg_catalog.text OPERATOR(pg_catalog.=)
            pg_catalog.current_setting('idfields.decimal_generator', true)
        AND pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'off'
    THEN
        RETURN pg_catalog.setval(idfields.decimal_position(),
            last OPERATOR(pg_catalog.+) 10000000000);
    END IF;
    RETURN idfields.decimal_slow_path();
END
$$;

-- Decoders, bound at creation. "time_ms" is unix milliseconds.
CREATE OR REPLACE FUNCTION idfields.decode_snowflake(
    id bigint, OUT "timestamp" bigint, OUT node integer, OUT sequence integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT id >> 22, ((id >> 12) & 1023)::integer, (id & 4095)::integer,
        1704067200000 + (id >> 22),
        timestamptz '2024-01-01 00:00:00+00' + (id >> 22) * interval '1 millisecond',
        id > 0 AND id >> 22 <= 2199023255551;
END;

CREATE OR REPLACE FUNCTION idfields.decode_traceid(
    id bigint, reference timestamptz, OUT "timestamp" bigint, OUT node_no integer,
    OUT counter integer, OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT t.ts, ((id >> 22) & 65535)::integer, (id & 4194303)::integer,
        t.sec * 1000, pg_catalog.to_timestamp(0) + t.sec * interval '1 second',
        id > 0 AND t.ts <= 33554431 AND (id & 4194303) >= 1
    FROM (SELECT id >> 38 AS ts,
                 r.now_s + (((id >> 38) - r.now_s + 16777216) % 33554432 + 33554432) % 33554432
                     - 16777216 AS sec
          FROM (SELECT (pg_catalog.date_part('epoch', reference) * 1000000)::bigint AS us) AS u,
               LATERAL (SELECT CASE WHEN u.us >= 0 THEN u.us / 1000000
                                    ELSE -((-u.us + 999999) / 1000000) END AS now_s) AS r) AS t;
END;

CREATE OR REPLACE FUNCTION idfields.decode_traceid(
    id bigint, OUT "timestamp" bigint, OUT node_no integer,
    OUT counter integer, OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT * FROM idfields.decode_traceid(id, pg_catalog.clock_timestamp());
END;

CREATE OR REPLACE FUNCTION idfields.decode_decimal(
    id bigint, OUT counter bigint, OUT generator_id integer, OUT launch_id integer,
    OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT id / 10000000000, ((id / 100000) % 100000)::integer, (id % 100000)::integer,
        id / 10000000000 BETWEEN 1 AND 922337202;
END;

-- The internal functions take any geometry, lease key, tick or generator id: for the owner
-- only, who reaches them through the issue_* functions and decimal_slow_path(). (The test hooks, which issue at any tick they are
-- given, are revoked where they are created: a hook's grantee needs issue_<layout>_at too.)
REVOKE ALL ON FUNCTION
    idfields.time_next(idfields.geometry, bigint, regclass, bigint),
    idfields.take_id_ranges(idfields.geometry, bigint, regclass),
    idfields.time_slow_path(idfields.geometry, bigint, regclass),
    idfields.time_refuse(text, text, regclass), idfields.time_sequence(text),
    idfields.session_sequence(text, text), idfields.time_window(text),
    idfields.time_session(text),
    idfields.time_session_claim(idfields.geometry, regclass, bigint, bigint),
    idfields.time_renew(idfields.geometry, integer, bigint, bigint, bigint, bigint, bigint,
        bigint, bigint, integer, bigint, bigint, text),
    idfields.time_record_claim(idfields.geometry, regclass, integer, bigint, bigint, integer,
        bigint, bigint, text),
    idfields.time_wait_for_clock(text, bigint, bigint, bigint, bigint),
    idfields.time_claim(idfields.geometry, integer, bigint, bigint, bigint, bigint, integer,
        integer, bigint, bigint),
    idfields.time_take_back_node(idfields.geometry, integer, bigint, bigint, bigint, integer,
        text, bigint),
    idfields.time_claim_leased_node(idfields.geometry, integer, bigint, bigint, bigint,
        integer, integer, text, bigint, integer),
    idfields.time_claim_new_node(idfields.geometry, integer, bigint, bigint, bigint, integer,
        integer, text, bigint, integer),
    idfields.fence_sequence(integer, integer), idfields.node_fence_ms(integer, integer),
    idfields.raise_node_fence(integer, integer, bigint), idfields.commit_durably(),
    idfields.decimal_cover_generator(integer, bigint),
    idfields.decimal_take_generator(integer, integer, bigint),
    idfields.record_change_launch(text),
    idfields.record_epoch(text, bigint, bigint, boolean, bigint),
    idfields.database_epoch(bigint)
    FROM PUBLIC;

-- Who holds which node, app processes and database backends alike (manage.py idfields_nodes
-- and python -m idfields.sqlalchemy_ext nodes show the same). An app holder is
-- 'host:pid:boot:start:token', a backend 'pg:pid:start ms'. A backend's row is 'dead' when its
-- pid is gone from pg_stat_activity: an app claim takes that node at once, behind its fence.
-- The view reads through a function with a string body, so it does not depend on the lease
-- table: dropping the idfields tables (drop_all, a test teardown) never needs CASCADE.
CREATE OR REPLACE FUNCTION idfields.node_holder_rows()
RETURNS TABLE (layout text, node integer, kind text, host text, pid integer,
               since timestamptz, expires timestamptz, state text, holder text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
SELECT l.layout::text, l.node,
    CASE WHEN l.holder = '' THEN 'released'
         WHEN l.holder ~ '^pg:[0-9]+:[0-9]*$' THEN 'database' ELSE 'app' END,
    CASE WHEN l.holder ~ '^pg:[0-9]+:[0-9]*$' THEN 'database backend'
         ELSE (regexp_match(l.holder, '^(.*):[0-9]+:[^:]*:[^:]*:[^:]*$'))[1] END,
    (CASE WHEN l.holder ~ '^pg:[0-9]+:[0-9]*$' THEN split_part(l.holder, ':', 2)
          ELSE (regexp_match(l.holder, '^.*:([0-9]+):[^:]*:[^:]*:[^:]*$'))[1] END)::integer,
    to_timestamp(l.acquired_at_ms / 1000.0),
    to_timestamp(l.expires_at_ms / 1000.0),
    CASE WHEN l.holder = '' THEN 'released'
         WHEN l.expires_at_ms < idfields.clock_ms() THEN 'expired'
         WHEN l.holder ~ '^pg:[0-9]+:[0-9]*$' AND NOT EXISTS (
             SELECT FROM pg_stat_activity AS a
             WHERE a.pid = split_part(l.holder, ':', 2)::integer) THEN 'dead'
         ELSE 'live' END,
    l.holder::text
FROM @lease_schema@.idfields_node_lease AS l
$$;

CREATE OR REPLACE VIEW idfields.node_holders AS SELECT * FROM idfields.node_holder_rows();
-- Every role that may use schema idfields may read who holds which node (node_holder_rows()
-- reads the lease table as the owner).
GRANT SELECT ON idfields.node_holders TO PUBLIC;

-- NATIVE. Where the optional C extension idfields_native (pgext/) is installed, next_snowflake()
-- and next_traceid() become inlined calls of its C functions, which do the hot path on the same
-- window and position, as their owner, and hand everything else to
-- issue_<layout>() above (docs/how-to/native-extension.md). Only the extension's own wire(),
-- in a schema the extension's owner owns, is run: a schema or function of that name a role with
-- CREATE on the database planted is never run by the installing role, and wired defaults never
-- hang on a schema such a role could drop.
DO $native$
DECLARE
    native record;
BEGIN
    SELECT e.oid, e.extowner::regrole AS owner, n.nspname, n.nspowner::regrole AS nspowner
    INTO native
    FROM pg_catalog.pg_extension AS e
    JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
    WHERE e.extname = 'idfields_native';
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF native.nspowner <> native.owner THEN
        RAISE EXCEPTION 'idfields: the extension idfields_native is in schema %, which role % '
            'owns, not the extension''s owner %', native.nspname, native.nspowner, native.owner
            USING ERRCODE = '42501',
            HINT = 'That role could drop the C functions, and the column defaults wired to them, '
                   'or plant functions beside them. DROP EXTENSION idfields_native; DROP SCHEMA '
                   || pg_catalog.quote_ident(native.nspname) || ' (once checked); then CREATE '
                   'EXTENSION idfields_native, which makes the schema itself, and run this '
                   'install again.';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_depend AS d
        WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.refobjid = native.oid
            AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
            AND d.objid = pg_catalog.to_regprocedure(
                pg_catalog.quote_ident(native.nspname) || '.wire(boolean)'))
    THEN
        EXECUTE pg_catalog.format('SELECT %I.wire()', native.nspname);
    END IF;
END
$native$;

-- The installed version, which the install operations read before replacing or dropping
-- anything: an upgrade knows what it replaces, and a version they do not know is refused.
COMMENT ON SCHEMA idfields IS 'idfields SQL 0001';

SELECT pg_catalog.set_config('search_path',
    pg_catalog.current_setting('idfields.install_search_path'), true);
