-- idfields 0001: ID functions of layout narrow, from idfields.sql.layouts.
CREATE OR REPLACE FUNCTION idfields."next_narrow_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE
        WHEN ((pg_catalog.nextval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass)
            - (now_tick << 14)) & -9223372036854775793) > 0
        THEN pg_catalog.lastval()
        -- CASE, not AND, fixes the order: lastval() only once the window is set (then the
        -- nextval() above ran).
        WHEN CASE WHEN now_tick <= NULLIF(pg_catalog.current_setting('idfields.narrow_limit', true), '')::bigint
            THEN (pg_catalog.lastval() & 15) <> 0 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass,
            (GREATEST(now_tick, (pg_catalog.lastval() >> 14) + 1) << 14)
            | (pg_catalog.lastval() & 16368))
        ELSE idfields.time_slow_path('narrow', now_tick, 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000)
    END
$$;

CREATE OR REPLACE FUNCTION idfields."next_narrow"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE
        WHEN ((pg_catalog.nextval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass)
            - ((idfields.clock_ms() - 1704067200000) << 14)) & -9223372036854775793) > 0
        THEN pg_catalog.lastval()
        -- CASE, not AND, fixes the order: lastval() only once the window is set (then the
        -- nextval() above ran).
        WHEN CASE WHEN (idfields.clock_ms() - 1704067200000) <= NULLIF(pg_catalog.current_setting('idfields.narrow_limit', true), '')::bigint
            THEN (pg_catalog.lastval() & 15) <> 0 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass,
            (GREATEST((idfields.clock_ms() - 1704067200000), (pg_catalog.lastval() >> 14) + 1) << 14)
            | (pg_catalog.lastval() & 16368))
        ELSE idfields.time_slow_path('narrow', (idfields.clock_ms() - 1704067200000), 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000)
    END
$$;

CREATE OR REPLACE FUNCTION idfields."decode_narrow"(
    id bigint, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT (id >> 14), ((id >> 4) & 1023)::integer,
        (id & 15)::integer, t.at,
        CASE WHEN t.at BETWEEN -62135596800000 AND 253402300799999
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / 86400000) * interval '1 day'
                + (t.at % 86400000) * interval '1 millisecond') END,
        id > 0
        AND (id >> 14) <= 2199023255551
    FROM (SELECT 1704067200000 + w.tick AS at
          FROM (SELECT (id >> 14) AS tick) AS w) AS t
$$;

-- drop
DROP FUNCTION IF EXISTS idfields."next_narrow"();
DROP FUNCTION IF EXISTS idfields."next_narrow_at"(bigint);
DROP FUNCTION IF EXISTS idfields."decode_narrow"(bigint);
