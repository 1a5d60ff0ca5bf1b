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
DECLARE
    claim text := pg_catalog.current_setting('idfields.sparse_lease', true);
    tick bigint := ((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000) / 10);
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_sparse')::oid::text
            AND (pg_catalog.current_setting('idfields.sparse', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 2;
    next_id bigint := GREATEST(last + 1, (tick << 4) | base);
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF ((last # base) | (next_id # base)) & -17592186044404 = 0
        AND next_id >> 4 <= tick + 100
        AND next_id >> 4 <= NULLIF(pg_catalog.current_setting('idfields.sparse_limit', true), '')::bigint
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.sparse', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        ROW('sparse', 'sparse#dd74f73ed98f', 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000)::idfields.geometry, tick, visible_lease, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_sparse_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.sparse_lease', true);
    tick bigint := COALESCE(now_tick, ((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000) / 10));
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_sparse')::oid::text
            AND (pg_catalog.current_setting('idfields.sparse', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 2;
    next_id bigint := GREATEST(last + 1, (tick << 4) | base);
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF ((last # base) | (next_id # base)) & -17592186044404 = 0
        AND next_id >> 4 <= tick + 100
        AND next_id >> 4 <= NULLIF(pg_catalog.current_setting('idfields.sparse_limit', true), '')::bigint
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.sparse', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        ROW('sparse', 'sparse#dd74f73ed98f', 1704067200000000, 10000, 40, 4, false, 2, 0, 3, 2, 0, 0, 100, 2000)::idfields.geometry, tick, visible_lease, 0);
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

CREATE OR REPLACE FUNCTION idfields."next_sparse_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) + 1 - (now_tick << 4)) & -9223372036854775805) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_sparse_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_sparse_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_sparse"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) + 1 - (((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000) / 10) << 4)) & -9223372036854775805) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.sparse', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_sparse"(pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

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
DROP FUNCTION IF EXISTS idfields."next_sparse_at"(bigint);
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
