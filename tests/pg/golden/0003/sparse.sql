-- idfields 0003: ID functions of layout sparse, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

CREATE OR REPLACE FUNCTION idfields."next_sparse_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid,
            idfields.resume_time('sparse', now_tick, 40, 4, false, 2, 2, 0, 100))::regclass) + 1
            - (now_tick << 4)) & -9223372036854775805) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN now_tick <= NULLIF(pg_catalog.current_setting('idfields.sparse_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) & 3) <> 3 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass,
            (GREATEST(now_tick, (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) >> 4) + 1) << 4)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) & 12))
        ELSE idfields.time_slow_path('sparse', 'sparse#dd74f73ed98f', now_tick, 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_sparse_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_sparse"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid,
            idfields.resume_time('sparse', ((idfields.clock_ms() - 1704067200000) / 10), 40, 4, false, 2, 2, 0, 100))::regclass) + 1
            - (((idfields.clock_ms() - 1704067200000) / 10) << 4)) & -9223372036854775805) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN ((idfields.clock_ms() - 1704067200000) / 10) <= NULLIF(pg_catalog.current_setting('idfields.sparse_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) & 3) <> 3 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass,
            (GREATEST(((idfields.clock_ms() - 1704067200000) / 10), (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) >> 4) + 1) << 4)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) & 12))
        ELSE idfields.time_slow_path('sparse', 'sparse#dd74f73ed98f', ((idfields.clock_ms() - 1704067200000) / 10), 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_sparse"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT idfields.take_ids('sparse', 'sparse#dd74f73ed98f', n, 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000, pg_catalog.to_regclass('idfields_node_lease'));
END;

CREATE OR REPLACE FUNCTION idfields."decode_sparse"(
    id bigint, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT (id >> 4), ((id >> 2) & 3)::integer,
        (id & 3)::integer, t.at,
        CASE WHEN t.at BETWEEN -62135596800000 AND 253402300799999
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / 86400000) * interval '1 day'
                + (t.at % 86400000) * interval '1 millisecond') END,
        id > 0
        AND (id >> 4) <= 1099511627775
    FROM (SELECT 1704067200000 + w.tick * 10 AS at
          FROM (SELECT (id >> 4) AS tick) AS w) AS t;
END;

SELECT pg_catalog.set_config('search_path',
    pg_catalog.current_setting('idfields.install_search_path'), true);

-- drop
DROP FUNCTION IF EXISTS idfields."take_sparse"(bigint);
DROP FUNCTION IF EXISTS idfields."next_sparse"();
DROP FUNCTION IF EXISTS idfields."next_sparse_at"(bigint);
DROP FUNCTION IF EXISTS idfields."decode_sparse"(bigint);
