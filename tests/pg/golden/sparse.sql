-- idfields: ID functions of layout sparse, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- The layout's durable fences (D7), idfields.fence_<lease_lock_key(lease key)>_<node % 1024>.
DO $fences$
BEGIN
    FOR node IN 0..3 LOOP
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS idfields.%I MINVALUE 0 START 0',
            'fence_1553340170_' || node % 1024);
        EXECUTE pg_catalog.format('REVOKE ALL ON SEQUENCE idfields.%I FROM PUBLIC',
            'fence_1553340170_' || node % 1024);
        EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE idfields.%I TO PUBLIC',
            'fence_1553340170_' || node % 1024);
    END LOOP;
END
$fences$;

CREATE OR REPLACE FUNCTION idfields."issue_sparse"(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(ROW('sparse', 'sparse#dd74f73ed98f', 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000)::idfields.geometry, ((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) - 1704067200000) / 10), visible_lease, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_sparse_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(ROW('sparse', 'sparse#dd74f73ed98f', 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000)::idfields.geometry, COALESCE(now_tick, ((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) - 1704067200000) / 10)), visible_lease, 0);
END
$$;
REVOKE ALL ON FUNCTION idfields."issue_sparse_at"(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."issue_sparse_ranges"(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges(ROW('sparse', 'sparse#dd74f73ed98f', 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000)::idfields.geometry, n, visible_lease) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields."open_sparse"() RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_session('sparse');
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
CREATE OR REPLACE FUNCTION idfields."window_sparse"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    IF pg_catalog.pg_is_in_recovery() OR NOT COALESCE(pg_catalog.oideq(
            pg_catalog.to_regclass('idfields_node_lease')::pg_catalog.oid,
            idfields.lease_table()::pg_catalog.oid), true)
        OR (pg_catalog.to_regclass('pg_temp."idfields:sparse"') IS NULL
            OR pg_catalog.to_regclass('pg_temp."idfields_sparse"') IS NULL)
        AND pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'on'
    THEN
        PERFORM idfields."issue_sparse"(pg_catalog.to_regclass('idfields_node_lease'));
        RETURN NULL;
    END IF;
    RETURN idfields."open_sparse"();
END
$$;

CREATE OR REPLACE FUNCTION idfields."position_sparse"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    PERFORM idfields."open_sparse"();
    RETURN pg_catalog.to_regclass('pg_temp."idfields_sparse"');
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_sparse_at_on"(bound regclass, issued regclass, now_tick bigint)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '12'::bigint) + 1) & '-13'::bigint),
            (now_tick << 4)) | (pg_catalog.pg_sequence_last_value(bound) & '12'::bigint),
        pg_catalog.pg_sequence_last_value(bound)),
        pg_catalog.pg_sequence_last_value(bound))),
        idfields."issue_sparse_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_sparse_at_on"(regclass, regclass, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_sparse_at"(now_tick bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_sparse_at_on"(idfields."window_sparse"(), idfields."position_sparse"(), now_tick);
END
$$;
REVOKE ALL ON FUNCTION idfields."next_sparse_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_sparse_on"(bound regclass, issued regclass) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '12'::bigint) + 1) & '-13'::bigint),
            (((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000) - 1704067200000) / 10) << 4)) | (pg_catalog.pg_sequence_last_value(bound) & '12'::bigint),
        pg_catalog.pg_sequence_last_value(bound)),
        pg_catalog.pg_sequence_last_value(bound))),
        idfields."issue_sparse"(pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_sparse_on"(regclass, regclass) FROM PUBLIC;

-- COST 1: a bulk INSERT is not costed (and JIT-compiled) as if each row ran a statement.
CREATE OR REPLACE FUNCTION idfields."next_sparse"() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_sparse_on"(idfields."window_sparse"(), idfields."position_sparse"());
END
$$;

CREATE OR REPLACE FUNCTION idfields."take_sparse"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields."issue_sparse_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."take_sparse_ranges"(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields."issue_sparse_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
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
DROP FUNCTION IF EXISTS idfields."take_sparse_ranges"(bigint);
DROP FUNCTION IF EXISTS idfields."take_sparse"(bigint);
DROP FUNCTION IF EXISTS idfields."next_sparse"();
DROP FUNCTION IF EXISTS idfields."next_sparse_on"(regclass, regclass);
DROP FUNCTION IF EXISTS idfields."next_sparse_at"(bigint);
DROP FUNCTION IF EXISTS idfields."next_sparse_at_on"(regclass, regclass, bigint);
DROP FUNCTION IF EXISTS idfields."position_sparse"();
DROP FUNCTION IF EXISTS idfields."window_sparse"();
DROP FUNCTION IF EXISTS idfields."open_sparse"();
DROP FUNCTION IF EXISTS idfields."issue_sparse_ranges"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_sparse_at"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_sparse"(regclass);
DO $fences$
BEGIN
    FOR node IN 0..3 LOOP
        EXECUTE pg_catalog.format('DROP SEQUENCE IF EXISTS idfields.%I', 'fence_1553340170_' || node % 1024);
    END LOOP;
END
$fences$;
DROP FUNCTION IF EXISTS idfields."decode_sparse"(bigint);
