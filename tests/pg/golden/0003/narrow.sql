-- idfields 0003: ID functions of layout narrow, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

CREATE OR REPLACE FUNCTION idfields."next_narrow_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid,
            idfields.resume_time('narrow', now_tick, 41, 14, false, 4, 4, 0, 1000))::regclass) + 1
            - (now_tick << 14)) & -9223372036854775793) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN now_tick <= NULLIF(pg_catalog.current_setting('idfields.narrow_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) & 15) <> 15 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass,
            (GREATEST(now_tick, (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) >> 14) + 1) << 14)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) & 16368))
        ELSE idfields.time_slow_path('narrow', 'narrow#b4f0ae9ca745', now_tick, 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_narrow_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_narrow"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid,
            idfields.resume_time('narrow', (idfields.clock_ms() - 1704067200000), 41, 14, false, 4, 4, 0, 1000))::regclass) + 1
            - ((idfields.clock_ms() - 1704067200000) << 14)) & -9223372036854775793) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN (idfields.clock_ms() - 1704067200000) <= NULLIF(pg_catalog.current_setting('idfields.narrow_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) & 15) <> 15 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass,
            (GREATEST((idfields.clock_ms() - 1704067200000), (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) >> 14) + 1) << 14)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) & 16368))
        ELSE idfields.time_slow_path('narrow', 'narrow#b4f0ae9ca745', (idfields.clock_ms() - 1704067200000), 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_narrow"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT idfields.take_ids('narrow', 'narrow#b4f0ae9ca745', n, 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000, pg_catalog.to_regclass('idfields_node_lease'));
END;

CREATE OR REPLACE FUNCTION idfields."decode_narrow"(
    id bigint, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT (id >> 14), ((id >> 4) & 1023)::integer,
        (id & 15)::integer, t.at,
        CASE WHEN t.at BETWEEN -62135596800000 AND 253402300799999
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / 86400000) * interval '1 day'
                + (t.at % 86400000) * interval '1 millisecond') END,
        id > 0
        AND (id >> 14) <= 2199023255551
    FROM (SELECT 1704067200000 + w.tick AS at
          FROM (SELECT (id >> 14) AS tick) AS w) AS t;
END;

SELECT pg_catalog.set_config('search_path',
    pg_catalog.current_setting('idfields.install_search_path'), true);

-- drop
DROP FUNCTION IF EXISTS idfields."take_narrow"(bigint);
DROP FUNCTION IF EXISTS idfields."next_narrow"();
DROP FUNCTION IF EXISTS idfields."next_narrow_at"(bigint);
DROP FUNCTION IF EXISTS idfields."decode_narrow"(bigint);
