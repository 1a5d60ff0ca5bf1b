-- idfields: ID functions of layout narrow, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- The layout's durable fences (D7), idfields.fence_<lease_lock_key(lease key)>_<node % 1024>.
DO $fences$
BEGIN
    FOR node IN 0..1023 LOOP
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS idfields.%I MINVALUE 0 START 0',
            'fence_447495679_' || node % 1024);
        EXECUTE pg_catalog.format('REVOKE ALL ON SEQUENCE idfields.%I FROM PUBLIC',
            'fence_447495679_' || node % 1024);
        EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE idfields.%I TO PUBLIC',
            'fence_447495679_' || node % 1024);
    END LOOP;
END
$fences$;

CREATE OR REPLACE FUNCTION idfields."issue_narrow"(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.narrow_lease', true);
    tick bigint := (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000);
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_narrow')::oid::text
            AND (pg_catalog.current_setting('idfields.narrow', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 4;
    next_id bigint := GREATEST(last + 1, (tick << 14) | base);
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF ((last # base) | (next_id # base)) & -36028797018947600 = 0
        AND next_id >> 14 <= tick + 1000
        AND next_id >> 14 <= NULLIF(pg_catalog.current_setting('idfields.narrow_limit', true), '')::bigint
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.narrow', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        ROW('narrow', 'narrow#b4f0ae9ca745', 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000)::idfields.geometry, tick, visible_lease, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_narrow_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.narrow_lease', true);
    tick bigint := COALESCE(now_tick, (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000));
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_narrow')::oid::text
            AND (pg_catalog.current_setting('idfields.narrow', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 4;
    next_id bigint := GREATEST(last + 1, (tick << 14) | base);
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF ((last # base) | (next_id # base)) & -36028797018947600 = 0
        AND next_id >> 14 <= tick + 1000
        AND next_id >> 14 <= NULLIF(pg_catalog.current_setting('idfields.narrow_limit', true), '')::bigint
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.narrow', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        ROW('narrow', 'narrow#b4f0ae9ca745', 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000)::idfields.geometry, tick, visible_lease, 0);
END
$$;
REVOKE ALL ON FUNCTION idfields."issue_narrow_at"(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."issue_narrow_ranges"(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges(ROW('narrow', 'narrow#b4f0ae9ca745', 1704067200000000, 1000, 41, 14, false, 4, 0, 1023, 4, 0, 0, 1000, 2000)::idfields.geometry, n, visible_lease) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_narrow_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) + 1 - (now_tick << 14)) & -9223372036854775793) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_narrow_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_narrow_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_narrow"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) + 1 - ((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000) << 14)) & -9223372036854775793) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.narrow', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_narrow"(pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_narrow"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields."issue_narrow_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."take_narrow_ranges"(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields."issue_narrow_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
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
DROP FUNCTION IF EXISTS idfields."take_narrow_ranges"(bigint);
DROP FUNCTION IF EXISTS idfields."take_narrow"(bigint);
DROP FUNCTION IF EXISTS idfields."next_narrow"();
DROP FUNCTION IF EXISTS idfields."next_narrow_at"(bigint);
DROP FUNCTION IF EXISTS idfields."issue_narrow_ranges"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_narrow_at"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_narrow"(regclass);
DO $fences$
BEGIN
    FOR node IN 0..1023 LOOP
        EXECUTE pg_catalog.format('DROP SEQUENCE IF EXISTS idfields.%I', 'fence_447495679_' || node % 1024);
    END LOOP;
END
$fences$;
DROP FUNCTION IF EXISTS idfields."decode_narrow"(bigint);
