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
-- WHY THE STATE IS A SETTING. The hot state (node, how far it may issue) is a custom setting
-- (set_config, not local). Settings are transactional like the lease row they describe: if the
-- (sub)transaction that wrote the row rolls back, the setting rolls back with it, so a backend
-- never issues on a claim whose row write was undone. The issued position lives in a temporary
-- sequence (pg_temp.idfields_<layout>), which a rollback does not rewind, so a backend's IDs
-- keep increasing. No row lock is taken per ID; the lease row is locked only by its holder's
-- own renewal (once a second while issuing), which no other writer waits on.
--
-- CLOCK. clock_timestamp(), never now(): one statement may span many milliseconds. When the
-- clock steps back, or a tick's sequence runs out, a backend keeps counting in later ticks, up
-- to 1 s ahead of the clock; further than that raises (SQLSTATE 22008) instead of repeating.
-- next_snowflake() is next_snowflake_at(<now>) with the clock read inline: tests pass their own
-- clock to the same code, production pays no extra setting read.
--
-- DECIMALID. next_decimalid() uses the latest launch (public.idfields_launch) and takes a fresh
-- generator_id from public.idfields_counter 'generator:<launch>', the counter the app uses, so
-- no generator id is ever shared. That counter row stays locked until the claiming transaction
-- ends (once per backend per 922,337,202 IDs).
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
AS $$ SELECT (('x' || pg_catalog.substr(pg_catalog.md5('idfields_node_lease:' || layout), 1, 8))::bit(32)::integer) & 2147483647 $$;

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
AS $$ SELECT (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000 $$;

-- The slow path of the time-based generators: claim or renew a node, or refuse a clock that
-- is too far behind. Called by the hot functions with their layout's constants; returns the ID.
-- state setting 'idfields.<layout>' = node * 2^42 + last tick the hot path may issue;
-- 'idfields.<layout>_lease' = 'node:acquired_at_ms:expires_at_ms' of the current claim.
CREATE OR REPLACE FUNCTION idfields.time_slow_path(
    layout text, now_tick bigint, epoch_ms bigint, unit_ms bigint, ts_bits integer,
    wraps boolean, node_bits integer, seq_bits integer, seq_min bigint, max_ahead bigint,
    lease_ms bigint, pos bigint, pos_node_bits integer
) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    seq text := 'pg_temp.idfields_' || layout;
    key integer := idfields.lease_lock_key(layout);
    me text := idfields.backend_holder();
    lease text := pg_catalog.current_setting('idfields.' || layout || '_lease', true);
    now_ms bigint := epoch_ms + now_tick * unit_ms;
    pshift integer := pos_node_bits + seq_bits;
    seq_mask bigint := (1::bigint << seq_bits) - 1;
    claimed integer;
    previous integer;
    acquired bigint;
    promise bigint;
    fence bigint := -1;
    same boolean;
    tick bigint;
    limit_tick bigint;
    cand record;
BEGIN
    PERFORM pg_catalog.set_config('idfields.' || layout, '', false);  -- hot path off until done
    IF pg_catalog.to_regclass(seq) IS NULL THEN
        EXECUTE pg_catalog.format('CREATE TEMPORARY SEQUENCE pg_temp.%I MINVALUE 0',
            'idfields_' || layout);
        pos := NULL;
    END IF;
    pos := COALESCE(pos, pg_catalog.nextval(seq::regclass));
    promise := GREATEST(now_ms, epoch_ms + ((pos >> pshift) + 2) * unit_ms) + lease_ms;
    IF lease IS NOT NULL AND lease <> '' THEN  -- renew our claim if the row is still ours
        claimed := pg_catalog.split_part(lease, ':', 1)::integer;
        previous := claimed;
        acquired := pg_catalog.split_part(lease, ':', 2)::bigint;
        UPDATE public.idfields_node_lease AS l SET expires_at_ms = promise
        WHERE l.layout = time_slow_path.layout AND l.node = claimed
          AND l.holder = me AND l.acquired_at_ms = acquired;
        IF NOT FOUND THEN  -- an app process took the lapsed row: claim another node
            PERFORM pg_catalog.pg_advisory_unlock(key, claimed);
            claimed := NULL;
        END IF;
    END IF;
    IF claimed IS NULL THEN
        -- Locks this backend still holds from claims that were rolled back: let them go.
        FOR cand IN SELECT l.objid::integer AS node FROM pg_catalog.pg_locks AS l
            WHERE l.locktype = 'advisory' AND l.pid = pg_catalog.pg_backend_pid()
              AND l.classid = key::oid AND l.objsubid = 2 AND l.database = (
                  SELECT d.oid FROM pg_catalog.pg_database AS d
                  WHERE d.datname = pg_catalog.current_database())
        LOOP
            WHILE pg_catalog.pg_advisory_unlock(key, cand.node) LOOP END LOOP;
        END LOOP;
        acquired := now_ms;
        -- Lapsed rows first (oldest first), then node numbers never used.
        FOR cand IN SELECT l.node, l.expires_at_ms FROM public.idfields_node_lease AS l
            WHERE l.layout = time_slow_path.layout AND l.expires_at_ms < now_ms
              AND l.node BETWEEN 0 AND (1 << node_bits) - 1
            ORDER BY l.expires_at_ms
        LOOP
            CONTINUE WHEN NOT pg_catalog.pg_try_advisory_lock(key, cand.node);
            UPDATE public.idfields_node_lease AS l
            SET holder = me, acquired_at_ms = acquired, expires_at_ms = promise
            WHERE l.layout = time_slow_path.layout AND l.node = cand.node
              AND l.expires_at_ms = cand.expires_at_ms;
            IF FOUND THEN
                claimed := cand.node;
                fence := cand.expires_at_ms;
                EXIT;
            END IF;
            PERFORM pg_catalog.pg_advisory_unlock(key, cand.node);
        END LOOP;
        IF claimed IS NULL THEN
            FOR cand IN SELECT g.n AS node
                FROM pg_catalog.generate_series(0, (1 << node_bits) - 1) AS g(n)
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
                layout, 1 << node_bits
                USING ERRCODE = '53400',
                HINT = 'Every node of the layout is leased (see public.idfields_node_lease). '
                       'Use fewer connections that generate IDs, wait for dead holders'' '
                       'leases to lapse, or choose a layout with more node bits.';
        END IF;
    END IF;
    PERFORM pg_catalog.set_config('idfields.' || layout || '_lease',
        claimed || ':' || acquired || ':' || promise, false);
    -- Continue the current tick if nothing changed, else start a later one: after our own last
    -- ID, after the previous holder's promise, not before now, and not too far ahead of now.
    same := previous IS NOT DISTINCT FROM claimed AND (pos & seq_mask) >= seq_min
        AND (pos_node_bits = 0 OR (pos >> seq_bits) & ((1 << pos_node_bits) - 1) = claimed);
    tick := GREATEST(now_tick, (pos >> pshift) + CASE WHEN same THEN 0 ELSE 1 END,
        (fence - epoch_ms) / unit_ms + 1);
    IF tick > now_tick + max_ahead THEN
        RAISE EXCEPTION 'idfields: the clock is % ms behind the last % ID of this backend',
            (tick - now_tick) * unit_ms, layout
            USING ERRCODE = '22008',
            HINT = 'The server clock stepped back further than idfields carries forward (1 s). '
                   'Wait for it to catch up; IDs resume by themselves, none is repeated.';
    END IF;
    IF NOT same OR tick > pos >> pshift THEN
        pos := pg_catalog.setval(seq::regclass, (tick << pshift) + seq_min
            + CASE WHEN pos_node_bits > 0 THEN claimed::bigint << seq_bits ELSE 0 END);
    END IF;
    -- The hot path may issue while the whole tick lies inside the promise, minus half a lease.
    limit_tick := (promise - lease_ms / 2 - epoch_ms + 1) / unit_ms - 1;
    PERFORM pg_catalog.set_config('idfields.' || layout, (CASE WHEN pos_node_bits > 0
        THEN (limit_tick << pshift) | (claimed::bigint << seq_bits) | seq_mask
        ELSE (claimed::bigint << 42) + limit_tick END)::text, false);
    IF wraps THEN
        tick := tick % (1::bigint << ts_bits);
    END IF;
    RETURN (tick << (node_bits + seq_bits)) | (claimed::bigint << seq_bits) | (pos & seq_mask);
END
$$;

-- snowflake: 41-bit ms since 2024-01-01 (1704067200000) | 10-bit node | 12-bit sequence.
-- The temporary sequence holds the ID itself (this backend's node in bits 12-21); the setting
-- holds the largest ID the hot path may return. A carry out of the 12 sequence bits changes
-- the node bits, which sends the call to the slow path.
CREATE OR REPLACE FUNCTION idfields.next_snowflake_at(now_tick bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    hot bigint := NULLIF(pg_catalog.current_setting('idfields.snowflake', true), '')::bigint;
    pos bigint;
BEGIN
    IF hot IS NOT NULL THEN
        pos := pg_catalog.nextval('pg_temp.idfields_snowflake'::regclass);
        IF (pos # hot) & 4190208 = 0 AND pos <= hot THEN
            IF pos >> 22 >= now_tick THEN
                RETURN pos;
            ELSIF now_tick <= hot >> 22 THEN
                RETURN pg_catalog.setval('pg_temp.idfields_snowflake'::regclass,
                    (now_tick << 22) | (hot & 4190208));
            END IF;
        END IF;
    END IF;
    RETURN idfields.time_slow_path('snowflake', now_tick, 1704067200000, 1, 41, false, 10, 12, 0,
        1000, 2000, pos, 10);
END
$$;

CREATE OR REPLACE FUNCTION idfields.next_snowflake() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$ SELECT idfields.next_snowflake_at(idfields.clock_ms() - 1704067200000) $$;

-- traceid: 25-bit unix seconds mod 2^25 | 16-bit node_no | 22-bit counter >= 1.
-- now_tick is unwrapped unix seconds; the ID carries it modulo 2^25.
CREATE OR REPLACE FUNCTION idfields.next_traceid_at(now_tick bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    hot bigint := NULLIF(pg_catalog.current_setting('idfields.traceid', true), '')::bigint;
    pos bigint;
BEGIN
    IF hot IS NOT NULL THEN
        pos := pg_catalog.nextval('pg_temp.idfields_traceid'::regclass);
        IF pos & 4194303 <> 0 AND pos >> 22 <= (hot & 4398046511103) THEN
            IF pos >> 22 < now_tick AND now_tick <= (hot & 4398046511103) THEN
                pos := pg_catalog.setval('pg_temp.idfields_traceid'::regclass, (now_tick << 22) + 1);
            END IF;
            IF pos >> 22 >= now_tick THEN
                RETURN (((pos >> 22) & 33554431) << 38) | ((hot >> 42) << 22) | (pos & 4194303);
            END IF;
        END IF;
    END IF;
    RETURN idfields.time_slow_path('traceid', now_tick, 0, 1000, 25, true, 16, 22, 1, 1, 5000,
        pos, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields.next_traceid() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$ SELECT idfields.next_traceid_at(idfields.clock_ms() / 1000) $$;

-- decimal: counter * 10^10 + generator_id * 10^5 + launch_id; counter 1..922337202.
-- state setting 'idfields.decimalid' = generator_id * 10^5 + launch_id.
CREATE OR REPLACE FUNCTION idfields.decimalid_slow_path() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    launch integer;
    generator bigint;
    counter_name text;
BEGIN
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
    IF pg_catalog.to_regclass('pg_temp.idfields_decimalid') IS NULL THEN
        CREATE TEMPORARY SEQUENCE pg_temp.idfields_decimalid MINVALUE 0;
    END IF;
    PERFORM pg_catalog.setval('pg_temp.idfields_decimalid'::regclass, 1, true);
    PERFORM pg_catalog.set_config('idfields.decimalid', (generator * 100000 + launch)::text, false);
    RETURN 1 * 10000000000 + generator * 100000 + launch;
END
$$;

CREATE OR REPLACE FUNCTION idfields.next_decimalid() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    hot bigint := NULLIF(pg_catalog.current_setting('idfields.decimalid', true), '')::bigint;
    pos bigint;
BEGIN
    IF hot IS NOT NULL THEN
        pos := pg_catalog.nextval('pg_temp.idfields_decimalid'::regclass);
        IF pos BETWEEN 1 AND 922337202 THEN
            RETURN pos * 10000000000 + hot;
        END IF;
    END IF;
    RETURN idfields.decimalid_slow_path();
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
                 r.now_s - ((r.now_s - (id >> 38)) % 33554432 + 33554432) % 33554432 AS sec
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
