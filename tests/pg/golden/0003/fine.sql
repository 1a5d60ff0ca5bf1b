-- idfields 0003: ID functions of layout fine, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

CREATE OR REPLACE FUNCTION idfields."next_fine_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid,
            idfields.resume_time('fine', now_tick, 50, 13, false, 7, 7, 0, 1000000))::regclass) + 1
            - (now_tick << 13)) & -9223372036854775681) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN now_tick <= NULLIF(pg_catalog.current_setting('idfields.fine_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) & 127) <> 127 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass,
            (GREATEST(now_tick, (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) >> 13) + 1) << 13)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) & 8064))
        ELSE idfields.time_slow_path('fine', 'fine#30d758cf0517', now_tick, 1704067200000000, 1, 50, 13, false, 7, 0, 63, 7, 0, 0, 1000000, 2000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_fine_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_fine"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(COALESCE(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid,
            idfields.resume_time('fine', (idfields.clock_us() - 1704067200000000), 50, 13, false, 7, 7, 0, 1000000))::regclass) + 1
            - ((idfields.clock_us() - 1704067200000000) << 13)) & -9223372036854775681) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) + 1)
        WHEN CASE WHEN (idfields.clock_us() - 1704067200000000) <= NULLIF(pg_catalog.current_setting('idfields.fine_limit', true), '')::bigint
            THEN (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) & 127) <> 127 END
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass,
            (GREATEST((idfields.clock_us() - 1704067200000000), (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) >> 13) + 1) << 13)
            | (pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.fine', true), '')::oid::regclass) & 8064))
        ELSE idfields.time_slow_path('fine', 'fine#30d758cf0517', (idfields.clock_us() - 1704067200000000), 1704067200000000, 1, 50, 13, false, 7, 0, 63, 7, 0, 0, 1000000, 2000, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_fine"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT idfields.take_ids('fine', 'fine#30d758cf0517', n, 1704067200000000, 1, 50, 13, false, 7, 0, 63, 7, 0, 0, 1000000, 2000, pg_catalog.to_regclass('idfields_node_lease'));
END;

CREATE OR REPLACE FUNCTION idfields."decode_fine"(
    id bigint, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_us bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT (id >> 13), ((id >> 7) & 63)::integer,
        (id & 127)::integer, t.at,
        CASE WHEN t.at BETWEEN -62135596800000000 AND 253402300799999999
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / 86400000000) * interval '1 day'
                + (t.at % 86400000000) * interval '1 microsecond') END,
        id > 0
    FROM (SELECT 1704067200000000 + w.tick AS at
          FROM (SELECT (id >> 13) AS tick) AS w) AS t;
END;

SELECT pg_catalog.set_config('search_path',
    pg_catalog.current_setting('idfields.install_search_path'), true);

-- drop
DROP FUNCTION IF EXISTS idfields."take_fine"(bigint);
DROP FUNCTION IF EXISTS idfields."next_fine"();
DROP FUNCTION IF EXISTS idfields."next_fine_at"(bigint);
DROP FUNCTION IF EXISTS idfields."decode_fine"(bigint);
