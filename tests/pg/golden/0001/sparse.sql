-- idfields 0001: ID functions of layout sparse, from idfields.sql.layouts.
CREATE OR REPLACE FUNCTION idfields."next_sparse_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE
        WHEN ((pg_catalog.nextval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass)
            - (now_tick << 4)) & -9223372036854775805) > 0
        THEN pg_catalog.lastval()
        -- CASE, not AND, fixes the order: lastval() only once the window is set (then the
        -- nextval() above ran).
        WHEN CASE WHEN now_tick <= NULLIF(pg_catalog.current_setting('idfields.sparse_limit', true), '')::bigint
            THEN (pg_catalog.lastval() & 3) <> 0 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass,
            (GREATEST(now_tick, (pg_catalog.lastval() >> 4) + 1) << 4)
            | (pg_catalog.lastval() & 12))
        ELSE idfields.time_slow_path('sparse', now_tick, 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000)
    END
$$;

CREATE OR REPLACE FUNCTION idfields."next_sparse"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$
    SELECT CASE
        WHEN ((pg_catalog.nextval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass)
            - (((idfields.clock_ms() - 1704067200000) / 10) << 4)) & -9223372036854775805) > 0
        THEN pg_catalog.lastval()
        -- CASE, not AND, fixes the order: lastval() only once the window is set (then the
        -- nextval() above ran).
        WHEN CASE WHEN ((idfields.clock_ms() - 1704067200000) / 10) <= NULLIF(pg_catalog.current_setting('idfields.sparse_limit', true), '')::bigint
            THEN (pg_catalog.lastval() & 3) <> 0 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass,
            (GREATEST(((idfields.clock_ms() - 1704067200000) / 10), (pg_catalog.lastval() >> 4) + 1) << 4)
            | (pg_catalog.lastval() & 12))
        ELSE idfields.time_slow_path('sparse', ((idfields.clock_ms() - 1704067200000) / 10), 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000)
    END
$$;

CREATE OR REPLACE FUNCTION idfields."decode_sparse"(
    id bigint, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT (id >> 4), ((id >> 2) & 3)::integer,
        (id & 3)::integer, t.at,
        CASE WHEN t.at BETWEEN -62135596800000 AND 253402300799999
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / 86400000) * interval '1 day'
                + (t.at % 86400000) * interval '1 millisecond') END,
        id > 0
        AND (id >> 4) <= 1099511627775
    FROM (SELECT 1704067200000 + w.tick * 10 AS at
          FROM (SELECT (id >> 4) AS tick) AS w) AS t
$$;

-- drop
DROP FUNCTION IF EXISTS idfields."next_sparse"();
DROP FUNCTION IF EXISTS idfields."next_sparse_at"(bigint);
DROP FUNCTION IF EXISTS idfields."decode_sparse"(bigint);
