-- idfields 0003: ID functions of layout coarse, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

CREATE OR REPLACE FUNCTION idfields."next_coarse_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid,
            idfields.resume_time('coarse', now_tick, 32, 31, false, 23, 23, 0, 1))::regclass) + 1
            - (now_tick << 31)) & -9223372036846387201) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN now_tick <= NULLIF(pg_catalog.current_setting('idfields.coarse_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) & 8388607) <> 8388607 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass,
            (GREATEST(now_tick, (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) >> 31) + 1) << 31)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) & 2139095040))
        ELSE idfields.time_slow_path('coarse', 'coarse#44db1635ee9e', now_tick, 1704067200000000, 1000000, 32, 31, false, 23, 0, 255, 23, 0, 0, 1, 5000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_coarse_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_coarse"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid,
            idfields.resume_time('coarse', ((idfields.clock_ms() - 1704067200000) / 1000), 32, 31, false, 23, 23, 0, 1))::regclass) + 1
            - (((idfields.clock_ms() - 1704067200000) / 1000) << 31)) & -9223372036846387201) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN ((idfields.clock_ms() - 1704067200000) / 1000) <= NULLIF(pg_catalog.current_setting('idfields.coarse_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) & 8388607) <> 8388607 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass,
            (GREATEST(((idfields.clock_ms() - 1704067200000) / 1000), (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) >> 31) + 1) << 31)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.coarse', true), '')::oid::regclass) & 2139095040))
        ELSE idfields.time_slow_path('coarse', 'coarse#44db1635ee9e', ((idfields.clock_ms() - 1704067200000) / 1000), 1704067200000000, 1000000, 32, 31, false, 23, 0, 255, 23, 0, 0, 1, 5000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_coarse"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT idfields.take_ids('coarse', 'coarse#44db1635ee9e', n, 1704067200000000, 1000000, 32, 31, false, 23, 0, 255, 23, 0, 0, 1, 5000, pg_catalog.to_regclass('idfields_node_lease'));
END;

CREATE OR REPLACE FUNCTION idfields."decode_coarse"(
    id bigint, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT (id >> 31), ((id >> 23) & 255)::integer,
        (id & 8388607)::integer, t.at,
        CASE WHEN t.at BETWEEN -62135596800000 AND 253402300799999
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / 86400000) * interval '1 day'
                + (t.at % 86400000) * interval '1 millisecond') END,
        id > 0
    FROM (SELECT 1704067200000 + w.tick * 1000 AS at
          FROM (SELECT (id >> 31) AS tick) AS w) AS t;
END;

SELECT pg_catalog.set_config('search_path',
    pg_catalog.current_setting('idfields.install_search_path'), true);

-- drop
DROP FUNCTION IF EXISTS idfields."take_coarse"(bigint);
DROP FUNCTION IF EXISTS idfields."next_coarse"();
DROP FUNCTION IF EXISTS idfields."next_coarse_at"(bigint);
DROP FUNCTION IF EXISTS idfields."decode_coarse"(bigint);
