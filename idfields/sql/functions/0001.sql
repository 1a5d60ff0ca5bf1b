-- idfields database-side ID functions, version 0001. Released files are never edited: a new
-- version gets a new file, so a migration that names "0001" replays the same way forever.
--
-- WHAT: schema idfields with next_snowflake(), next_traceid(), next_decimalid() (same layouts
-- and epochs as idfields.layouts) and decode_snowflake/_traceid/_decimalid(bigint), which agree
-- with Python's Layout.decode bit for bit. The lease tables live in schema "public".
--
-- NODE IDENTITY (snowflake, traceid). A backend claims a row of public.idfields_node_lease the
-- way the app does (a row whose expires_at_ms has passed, or a node never used; the new holder
-- starts strictly after the old expires_at_ms), holding a session-level advisory lock
-- (idfields.lease_lock_key(layout), node) while it uses the node. The row says
-- holder = 'pg:<pid>:<backend start, unix ms>', and expires_at_ms is the backend's promise: it
-- issues no timestamp after it, and renews it (UPDATE of its own row) once less than half the
-- lease is left. So app-side claimers need no change: a live backend's row is unexpired like a
-- live process's. The advisory lock only keeps backends from racing each other for a row.
-- A backend idle past its lease may lose the row to an app process; its next call sees the
-- holder changed and claims another node.
--
-- HOT PATH AND STATE. Each backend keeps its position in a temporary sequence
-- (pg_temp.idfields_<layout>) whose value is the last ID itself; a rollback does not rewind a
-- sequence, so a backend's IDs keep increasing. next_snowflake() and next_traceid() are plain
-- SQL expressions that PostgreSQL inlines into the calling statement: nextval(), one clock
-- read, and a bit test that the value lies in the tick the slow path validated, is not behind
-- the clock and has not used up its sequence bits; then lastval() returns it. Anything else
-- (a new tick, a used-up tick, the first call of a transaction) goes to the PL/pgSQL slow path,
-- about once a millisecond while inserting. The sequence is found through the setting
-- 'idfields.<layout>', set transaction-locally by the slow path: every transaction starts on the
-- slow path, which checks the lease as the (sub)transactions that committed left it. The claim
-- ('idfields.<layout>_lease') is a session setting, transactional like the lease row it
-- describes: a rolled-back claim or renewal is forgotten with the row write, so no ID is issued
-- on it once its transaction is gone. No row lock is taken per ID; the lease row is written
-- only by its holder's own renewal (once a second while issuing), which no other writer waits
-- on. IDs returned inside a transaction that renewed the lease and then rolled back are covered
-- only by the lease the row had before; rows inserted there are rolled back with it.
--
-- CLOCK. clock_timestamp(), never now(): one statement may span many milliseconds. When the
-- clock steps back, or a tick's sequence runs out, a backend keeps counting in later ticks, up
-- to 1 s ahead of the clock, then waits for the clock (up to 1 s, like the app's generator);
-- further than that raises (SQLSTATE 22008) instead of repeating.
-- next_<layout>_at(now_tick) is the same expression with the clock given, a test hook.
--
-- DECIMALID. next_decimalid() uses the latest launch (public.idfields_launch) and takes a fresh
-- generator_id from public.idfields_counter 'generator:<launch>', the counter the app uses, so
-- no generator id is ever shared. That counter row stays locked until the claiming transaction
-- ends (once per backend per 922,337,201 IDs). Its hot path is inlined SQL as well.
--
-- GRANTS a role needs (functions run as the caller; no SECURITY DEFINER):
--   GRANT USAGE ON SCHEMA idfields TO app;
--   GRANT SELECT, INSERT, UPDATE ON public.idfields_node_lease TO app;
--   GRANT SELECT, INSERT, UPDATE ON public.idfields_counter TO app;
--   GRANT SELECT ON public.idfields_launch TO app;
--   TEMPORARY on the database (PUBLIC has it by default) and EXECUTE on the functions (PUBLIC
--   has it by default). A read-only transaction or a standby cannot claim a node.
-- pg_dump restores with an empty search_path: every name below is schema-qualified.

CREATE SCHEMA IF NOT EXISTS idfields;

-- The advisory-lock class of a layout's leases: 31 bits of md5, stable across versions.
CREATE OR REPLACE FUNCTION idfields.lease_lock_key(layout text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT (('x' || pg_catalog.substr(pg_catalog.md5('idfields_node_lease:' || layout), 1, 8))
        ::bit(32)::integer) & 2147483647
$$;

-- This backend's holder string: unique among all backends ever (pid + start time).
CREATE OR REPLACE FUNCTION idfields.backend_holder() RETURNS text
LANGUAGE sql STABLE PARALLEL RESTRICTED
AS $$
    SELECT 'pg:' || a.pid || ':'
        || ((pg_catalog.date_part('epoch', a.backend_start) * 1000000)::bigint / 1000)
    FROM pg_catalog.pg_stat_activity AS a
    WHERE a.pid = pg_catalog.pg_backend_pid()
$$;

-- Unix milliseconds of clock_timestamp(), with integer rounding (no float floor error).
CREATE OR REPLACE FUNCTION idfields.clock_ms() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    SELECT (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000
$$;

-- Unix microseconds of clock_timestamp(), for layouts whose unit or epoch is finer than 1 ms.
CREATE OR REPLACE FUNCTION idfields.clock_us() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    SELECT (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint
$$;

-- The slow path of the time-based generators, called by the hot functions with their layout's
-- constants when the hot path cannot issue: first call of a transaction, a new tick, a tick's
-- sequence used up. It claims or renews a node, refuses a clock that is too far behind, picks
-- the tick, points the temporary sequence at it and returns that tick's first ID.
-- 'idfields.<layout>' (transaction-local) = OID of pg_temp.idfields_<layout>: the hot path's
-- switch; 'idfields.<layout>_lease' (session) = 'node:acquired_at_ms:expires_at_ms' of the claim.
-- The layout is [constants] timestamp [constants] node [constants] sequence, in bits: the
-- timestamp (ts_bits wide, unit_us microseconds a tick since epoch_us) sits ts_shift bits up,
-- the node (node_min..node_max) node_shift bits up, the sequence (seq_min up to all ones) in the
-- lowest seq_bits; "fixed" holds every constant field's bits. idfields.sql.layouts renders user
-- layouts' hot paths over this same function.
CREATE OR REPLACE FUNCTION idfields.time_slow_path(
    layout text, now_tick bigint, epoch_us bigint, unit_us bigint, ts_bits integer,
    ts_shift integer, wraps boolean, node_shift integer, node_min integer, node_max integer,
    seq_bits integer, seq_min bigint, fixed bigint, max_ahead bigint, lease_ms bigint
) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    seq regclass := pg_catalog.to_regclass('pg_temp.idfields_' || layout);
    lease text := pg_catalog.current_setting('idfields.' || layout || '_lease', true);
    key integer;
    now_ms bigint;
    period bigint := 1::bigint << ts_bits;
    seq_mask bigint := (1::bigint << seq_bits) - 1;
    -- The bits of an ID that are neither timestamp nor sequence: node and constants.
    middle bigint := 9223372036854775807 # ((period - 1) << ts_shift) # seq_mask;
    me text;
    pos bigint;
    pos_tick bigint;
    claimed integer;
    acquired bigint;
    promise bigint;
    continues boolean;
    tick bigint;
    wait_us bigint;
    waited_us bigint := 0;
    started bigint;
    cand record;
BEGIN
    IF seq IS NULL THEN
        EXECUTE pg_catalog.format('CREATE TEMPORARY SEQUENCE pg_temp.%I MINVALUE -1 START -1',
            'idfields_' || layout);
        seq := pg_catalog.to_regclass('pg_temp.idfields_' || layout);
    END IF;
    -- The sequence holds this backend's last ID (or a later, unissued value): a fresh value
    -- tells where to go on, the one before it is the last tick used. That tick is unwrapped
    -- against the clock (ahead by max_ahead + 1 at most, else behind).
    pos := pg_catalog.nextval(seq);
    IF pos < 0 THEN  -- a new sequence: nothing issued yet
        pos_tick := now_tick - 1;
    ELSE
        pos_tick := ((pos - 1) >> ts_shift) & (period - 1);
    END IF;
    IF wraps AND pos >= 0 THEN
        pos_tick := ((pos_tick - now_tick) % period + period) % period;
        pos_tick := now_tick + pos_tick - CASE WHEN pos_tick > max_ahead + 1 THEN period ELSE 0 END;
    END IF;
    IF lease IS NOT NULL AND lease <> '' THEN
        claimed := pg_catalog.split_part(lease, ':', 1)::integer;
        acquired := pg_catalog.split_part(lease, ':', 2)::bigint;
        promise := pg_catalog.split_part(lease, ':', 3)::bigint;
    END IF;
    -- Go on in the sequence's tick while its node is ours and the tick is not used up (a carry
    -- out of the sequence bits changes the bits above them and leaves the sequence bits at 0;
    -- the slow path sets them to seq_min, so a continuation is above it).
    continues := pos > 0 AND pos & middle = (claimed::bigint << node_shift) | fixed
        AND pos & seq_mask > seq_min;
    tick := GREATEST(now_tick, pos_tick + CASE WHEN continues THEN 0 ELSE 1 END);
    -- Ahead of the clock by more than max_ahead (this backend used up a second's worth of
    -- ticks, or the clock stepped back): wait for the clock, up to 1 s in all, as the app's
    -- generator does; the clock (or the test hook's now_tick) moves on by the time waited.
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
                   'then up to 1 s of waiting). Wait for it to catch up; IDs resume by '
                   'themselves, none is repeated.';
    END IF;
    now_ms := (epoch_us + now_tick * unit_us) / 1000;
    IF NOT wraps AND tick >= period THEN
        RAISE EXCEPTION 'idfields: layout % ran out of timestamps (% bits)', layout, ts_bits
            USING ERRCODE = '22003',
            HINT = 'No ID was issued. Move the column to a layout with a later epoch or a wider '
                   'timestamp.';
    END IF;
    -- The tick must end inside the lease with half a lease to spare: renew, or claim a node.
    IF claimed IS NULL OR epoch_us + (tick + 1) * unit_us > (promise - lease_ms / 2) * 1000 THEN
        me := idfields.backend_holder();
        key := idfields.lease_lock_key(layout);
        promise := GREATEST(now_ms, (epoch_us + (tick + 2) * unit_us + 999) / 1000) + lease_ms;
        IF claimed IS NOT NULL THEN  -- renew our claim if the row is still ours
            UPDATE public.idfields_node_lease AS l SET expires_at_ms = promise
            WHERE l.layout = time_slow_path.layout AND l.node = claimed
              AND l.holder = me AND l.acquired_at_ms = acquired;
            IF NOT FOUND THEN  -- an app process took the lapsed row: claim another node
                PERFORM pg_catalog.pg_advisory_unlock(key, claimed);
                claimed := NULL;
            END IF;
        END IF;
        IF claimed IS NULL THEN
            continues := false;
            tick := GREATEST(tick, pos_tick + 1);
            -- Locks this backend still holds from claims that were rolled back: let them go
            -- (one hold at a time, until pg_locks shows none).
            LOOP
                SELECT l.objid::integer AS node INTO cand FROM pg_catalog.pg_locks AS l
                WHERE l.locktype = 'advisory' AND l.pid = pg_catalog.pg_backend_pid()
                  AND l.classid = key::oid AND l.objsubid = 2 AND l.database = (
                      SELECT d.oid FROM pg_catalog.pg_database AS d
                      WHERE d.datname = pg_catalog.current_database())
                LIMIT 1;
                EXIT WHEN NOT FOUND;
                PERFORM pg_catalog.pg_advisory_unlock(key, cand.node);
            END LOOP;
            acquired := now_ms;
            -- Lapsed rows first (oldest first), then node numbers never used.
            FOR cand IN SELECT l.node, l.expires_at_ms FROM public.idfields_node_lease AS l
                WHERE l.layout = time_slow_path.layout AND l.expires_at_ms < now_ms
                  AND l.node BETWEEN node_min AND node_max
                ORDER BY l.expires_at_ms
            LOOP
                CONTINUE WHEN NOT pg_catalog.pg_try_advisory_lock(key, cand.node);
                UPDATE public.idfields_node_lease AS l
                SET holder = me, acquired_at_ms = acquired, expires_at_ms = promise
                WHERE l.layout = time_slow_path.layout AND l.node = cand.node
                  AND l.expires_at_ms = cand.expires_at_ms;
                IF FOUND THEN
                    claimed := cand.node;
                    -- Fencing: start strictly after the tick holding the previous promise.
                    tick := GREATEST(tick, (cand.expires_at_ms * 1000 - epoch_us) / unit_us + 1);
                    EXIT;
                END IF;
                PERFORM pg_catalog.pg_advisory_unlock(key, cand.node);
            END LOOP;
            IF claimed IS NULL THEN
                FOR cand IN SELECT g.n AS node
                    FROM pg_catalog.generate_series(node_min, node_max) AS g(n)
                    WHERE NOT EXISTS (SELECT FROM public.idfields_node_lease AS l
                                      WHERE l.layout = time_slow_path.layout AND l.node = g.n)
                LOOP
                    CONTINUE WHEN NOT pg_catalog.pg_try_advisory_lock(key, cand.node);
                    INSERT INTO public.idfields_node_lease
                        (layout, node, holder, acquired_at_ms, expires_at_ms)
                    VALUES (time_slow_path.layout, cand.node, me, acquired, promise)
                    ON CONFLICT ON CONSTRAINT idfields_node_lease_layout_node_uniq DO NOTHING;
                    IF FOUND THEN
                        claimed := cand.node;
                        EXIT;
                    END IF;
                    PERFORM pg_catalog.pg_advisory_unlock(key, cand.node);
                END LOOP;
            END IF;
            IF claimed IS NULL THEN
                RAISE EXCEPTION 'idfields: no free % node: all % are held by live leases',
                    layout, node_max - node_min + 1
                    USING ERRCODE = '53400',
                    HINT = 'Every node of the layout is leased (see public.idfields_node_lease). '
                           'Use fewer connections that generate IDs, wait for dead holders'' '
                           'leases to lapse, or choose a layout with more node bits.';
            END IF;
        END IF;
        PERFORM pg_catalog.set_config('idfields.' || layout || '_lease',
            claimed || ':' || acquired || ':' || promise, false);
    END IF;
    PERFORM pg_catalog.set_config('idfields.' || layout, seq::oid::text, true);
    -- The last tick the hot path may move to by itself: it ends half a lease before the lease
    -- (and, one tick later at most, inside the timestamp's range).
    PERFORM pg_catalog.set_config('idfields.' || layout || '_limit', LEAST(
        ((promise - lease_ms / 2) * 1000 - epoch_us) / unit_us - 1,
        CASE WHEN NOT wraps THEN period - 2 END)::text, true);
    IF continues AND tick = pos_tick THEN
        RETURN pos;
    END IF;
    RETURN pg_catalog.setval(seq, ((CASE WHEN wraps THEN tick % period ELSE tick END)
        << ts_shift) | (claimed::bigint << node_shift) | fixed | seq_min);
END
$$;

-- The hot paths below are plain SQL expressions that PostgreSQL inlines into the calling
-- statement (about as cheap as the nextval() of an IDENTITY column): the next value of this
-- backend's temporary sequence, which holds the ID itself, is returned while it lies in the
-- tick the slow path validated, that tick is not behind the clock, and its sequence bits are
-- not used up. The sequence is found through a transaction-local setting, so the first call of
-- every transaction (and every rolled-back claim) goes through the slow path.
--
-- snowflake: 41-bit ms since 2024-01-01 (1704067200000) | 10-bit node | 12-bit sequence.
-- d = id - (now << 22) keeps its sign bit (tick behind the clock) and its sequence bits under
-- the mask -9223372036854771713 = sign | 4095: positive exactly when the ID may be returned.
-- A new millisecond is the common way out (about every thousand IDs, every few dozen when
-- eight sessions share two cores): while the clock stays inside the window the slow path
-- validated ('idfields.snowflake_limit', transaction-local) and the last value did not carry out
-- of its sequence bits (so bits 12-21 are this backend's node), the expression moves the
-- sequence to the new tick itself. The clock is read again for the new ID (never below the
-- last tick + 1, should it step back in between), so it may lie one tick past the window; the
-- window ends half a lease (1 s) before the lease does.
CREATE OR REPLACE FUNCTION idfields.next_snowflake_at(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE
        WHEN (pg_catalog.nextval(NULLIF(pg_catalog.current_setting(
            'idfields.snowflake', true), '')::oid::regclass) - (now_tick << 22))
            & -9223372036854771713 > 0
        THEN pg_catalog.lastval()
        -- CASE, not AND, fixes the order: lastval() only once the window is set (then the
        -- nextval() above ran).
        WHEN CASE WHEN now_tick <= NULLIF(pg_catalog.current_setting(
                'idfields.snowflake_limit', true), '')::bigint
            THEN pg_catalog.lastval() & 4095 <> 0 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting(
            'idfields.snowflake', true), '')::oid::regclass,
            (GREATEST(now_tick, (pg_catalog.lastval() >> 22) + 1) << 22)
            | (pg_catalog.lastval() & 4190208))
        ELSE idfields.time_slow_path('snowflake', now_tick, 1704067200000000, 1000, 41, 22,
            false, 12, 0, 1023, 12, 0, 0, 1000, 2000)
    END
$$;

-- The same expression with the clock read inline (an argument used twice would block inlining).
CREATE OR REPLACE FUNCTION idfields.next_snowflake() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE
        WHEN (pg_catalog.nextval(NULLIF(pg_catalog.current_setting(
            'idfields.snowflake', true), '')::oid::regclass)
            - ((idfields.clock_ms() - 1704067200000) << 22)) & -9223372036854771713 > 0
        THEN pg_catalog.lastval()
        -- CASE, not AND, fixes the order: lastval() only once the window is set (then the
        -- nextval() above ran).
        WHEN CASE WHEN (idfields.clock_ms() - 1704067200000) <= NULLIF(
                pg_catalog.current_setting('idfields.snowflake_limit', true), '')::bigint
            THEN pg_catalog.lastval() & 4095 <> 0 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting(
            'idfields.snowflake', true), '')::oid::regclass,
            (GREATEST(idfields.clock_ms() - 1704067200000, (pg_catalog.lastval() >> 22) + 1)
                << 22)
            | (pg_catalog.lastval() & 4190208))
        ELSE idfields.time_slow_path('snowflake', idfields.clock_ms() - 1704067200000,
            1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000)
    END
$$;

-- traceid: 25-bit unix seconds mod 2^25 | 16-bit node_no | 22-bit counter >= 1; now_tick is
-- unwrapped unix seconds. e = id - ((now mod 2^25) << 38) masked with bits 39-62 and 0-21
-- (9223371487103156223) lies in 1..4194303 exactly when the ID's tick is now or now + 1
-- (mod 2^25) and its counter is not used up.
CREATE OR REPLACE FUNCTION idfields.next_traceid_at(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE WHEN ((((pg_catalog.nextval(NULLIF(pg_catalog.current_setting(
            'idfields.traceid', true), '')::oid::regclass) - ((now_tick & 33554431) << 38))
            & 9223371487103156223) - 1) & -4194304) = 0
        THEN pg_catalog.lastval()
        ELSE idfields.time_slow_path('traceid', now_tick, 0, 1000000, 25, 38, true, 22, 0,
            65535, 22, 1, 0, 1, 5000)
    END
$$;

CREATE OR REPLACE FUNCTION idfields.next_traceid() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE WHEN ((((pg_catalog.nextval(NULLIF(pg_catalog.current_setting(
            'idfields.traceid', true), '')::oid::regclass)
            - (((idfields.clock_ms() / 1000) & 33554431) << 38))
            & 9223371487103156223) - 1) & -4194304) = 0
        THEN pg_catalog.lastval()
        ELSE idfields.time_slow_path('traceid', idfields.clock_ms() / 1000, 0, 1000000, 25, 38,
            true, 22, 0, 65535, 22, 1, 0, 1, 5000)
    END
$$;

-- decimal: counter * 10^10 + generator_id * 10^5 + launch_id; counter 1..922337202.
-- The temporary sequence steps by 10^10 and holds the ID itself. 'idfields.decimalid'
-- (transaction-local) = its OID; 'idfields.decimalid_generator' (session, so a rolled-back
-- claim is forgotten with it) = generator_id * 10^5 + launch_id of the committed claim.
CREATE OR REPLACE FUNCTION idfields.decimalid_slow_path() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    seq regclass := pg_catalog.to_regclass('pg_temp.idfields_decimalid');
    mine bigint := NULLIF(
        pg_catalog.current_setting('idfields.decimalid_generator', true), '')::bigint;
    last bigint;
    launch integer;
    generator bigint;
    counter_name text;
BEGIN
    IF seq IS NULL THEN
        CREATE TEMPORARY SEQUENCE pg_temp.idfields_decimalid INCREMENT BY 10000000000 MINVALUE 0;
        seq := pg_catalog.to_regclass('pg_temp.idfields_decimalid');
    END IF;
    PERFORM pg_catalog.set_config('idfields.decimalid', seq::oid::text, true);
    last := pg_catalog.pg_sequence_last_value(seq);
    -- Go on with our generator id while its counter lasts (up to 922337201, so the sequence
    -- never steps past 2^63 - 1).
    IF last % 10000000000 = mine AND last < 9223372010000000000 THEN
        RETURN pg_catalog.nextval(seq);
    END IF;
    SELECT max(l.id) INTO launch FROM public.idfields_launch AS l;
    IF launch IS NULL THEN
        RAISE EXCEPTION 'idfields: no launch is recorded, and DecimalId needs one'
            USING ERRCODE = '55000',
            HINT = 'Record a launch once per deployment: manage.py idfields_launch --label <version> '
                   '(or idfields.coordination.counters.record_launch()).';
    END IF;
    counter_name := 'generator:' || launch;
    INSERT INTO public.idfields_counter (name, value) VALUES (counter_name, 0)
    ON CONFLICT (name) DO NOTHING;
    UPDATE public.idfields_counter AS c SET value = c.value + 1
    WHERE c.name = counter_name RETURNING c.value INTO generator;
    IF generator > 99999 THEN
        RAISE EXCEPTION 'idfields: launch % has used all 100,000 DecimalId generator ids', launch
            USING ERRCODE = '53400',
            HINT = 'Record a new launch (manage.py idfields_launch --label <version>).';
    END IF;
    PERFORM pg_catalog.set_config('idfields.decimalid_generator',
        (generator * 100000 + launch)::text, false);
    RETURN pg_catalog.setval(seq, 10000000000 + generator * 100000 + launch);
END
$$;

-- Inlined like the time-based hot paths: the next ID while the counter is below 922337202.
CREATE OR REPLACE FUNCTION idfields.next_decimalid() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE WHEN pg_catalog.nextval(NULLIF(pg_catalog.current_setting(
            'idfields.decimalid', true), '')::oid::regclass) < 9223372020000000000
        THEN pg_catalog.lastval()
        ELSE idfields.decimalid_slow_path()
    END
$$;

-- Decoders: plain SQL, inlinable. "time_ms" is unix milliseconds (Python: time_ns // 10^6).
CREATE OR REPLACE FUNCTION idfields.decode_snowflake(
    id bigint, OUT "timestamp" bigint, OUT node integer, OUT sequence integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT id >> 22, ((id >> 12) & 1023)::integer, (id & 4095)::integer,
        1704067200000 + (id >> 22),
        timestamptz '2024-01-01 00:00:00+00' + (id >> 22) * interval '1 millisecond',
        id > 0 AND id >> 22 <= 2199023255551
$$;

CREATE OR REPLACE FUNCTION idfields.decode_traceid(
    id bigint, reference timestamptz, OUT "timestamp" bigint, OUT node_no integer,
    OUT counter integer, OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT t.ts, ((id >> 22) & 65535)::integer, (id & 4194303)::integer,
        t.sec * 1000, pg_catalog.to_timestamp(0) + t.sec * interval '1 second',
        id > 0 AND t.ts <= 33554431 AND (id & 4194303) >= 1
    FROM (SELECT id >> 38 AS ts,
                 r.now_s + (((id >> 38) - r.now_s + 16777216) % 33554432 + 33554432) % 33554432
                     - 16777216 AS sec
          FROM (SELECT (pg_catalog.date_part('epoch', reference) * 1000000)::bigint AS us) AS u,
               LATERAL (SELECT CASE WHEN u.us >= 0 THEN u.us / 1000000
                                    ELSE -((-u.us + 999999) / 1000000) END AS now_s) AS r) AS t
$$;

CREATE OR REPLACE FUNCTION idfields.decode_traceid(
    id bigint, OUT "timestamp" bigint, OUT node_no integer,
    OUT counter integer, OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE
AS $$ SELECT * FROM idfields.decode_traceid(id, pg_catalog.clock_timestamp()) $$;

CREATE OR REPLACE FUNCTION idfields.decode_decimalid(
    id bigint, OUT counter bigint, OUT generator_id integer, OUT launch_id integer,
    OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT id / 10000000000, ((id / 100000) % 100000)::integer, (id % 100000)::integer,
        id / 10000000000 BETWEEN 1 AND 922337202
$$;
