-- idfields: ID functions of layout wrapping, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- The layout's durable fences (D7), idfields.fence_<lease_lock_key(lease key)>_<node % 1024>.
DO $fences$
BEGIN
    FOR node IN 0..255 LOOP
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS idfields.%I MINVALUE 0 START 0',
            'fence_414282409_' || node % 1024);
        EXECUTE pg_catalog.format('REVOKE ALL ON SEQUENCE idfields.%I FROM PUBLIC',
            'fence_414282409_' || node % 1024);
        EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE idfields.%I TO PUBLIC',
            'fence_414282409_' || node % 1024);
    END LOOP;
END
$fences$;

CREATE OR REPLACE FUNCTION idfields."issue_wrapping"(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.wrapping_lease', true);
    tick bigint := ((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000);
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_wrapping')::oid::text
            AND (pg_catalog.current_setting('idfields.wrapping', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 10 | 281474976710656;
    next_id bigint := last + 1;
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF (last # base) & -281474976449536 = 0
        AND tick <= NULLIF(pg_catalog.current_setting('idfields.wrapping_limit', true), '')::bigint
        AND ((((next_id - (((tick & 1073741823) << 18) | 281474976710656)) & 281474976187391) - 1)
            & -1024) = 0
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.wrapping', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        ROW('wrapping', 'wrapping#5a22352cf624', 0, 1000, 30, 18, true, 10, 0, 255, 10, 0, 281474976710656, 1000, 2000)::idfields.geometry, tick, visible_lease, 281474976710656);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_wrapping_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.wrapping_lease', true);
    tick bigint := COALESCE(now_tick, ((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000));
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_wrapping')::oid::text
            AND (pg_catalog.current_setting('idfields.wrapping', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 10 | 281474976710656;
    next_id bigint := last + 1;
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF (last # base) & -281474976449536 = 0
        AND tick <= NULLIF(pg_catalog.current_setting('idfields.wrapping_limit', true), '')::bigint
        AND ((((next_id - (((tick & 1073741823) << 18) | 281474976710656)) & 281474976187391) - 1)
            & -1024) = 0
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.wrapping', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        ROW('wrapping', 'wrapping#5a22352cf624', 0, 1000, 30, 18, true, 10, 0, 255, 10, 0, 281474976710656, 1000, 2000)::idfields.geometry, tick, visible_lease, 281474976710656);
END
$$;
REVOKE ALL ON FUNCTION idfields."issue_wrapping_at"(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."issue_wrapping_ranges"(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges(ROW('wrapping', 'wrapping#5a22352cf624', 0, 1000, 30, 18, true, 10, 0, 255, 10, 0, 281474976710656, 1000, 2000)::idfields.geometry, n, visible_lease) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_wrapping_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.wrapping', true), '')::oid::regclass) + 1 - (((now_tick & 1073741823) << 18) | 281474976710656)) & 281474976187391) - 1)
            & -1024) = 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.wrapping', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.wrapping', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_wrapping_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_wrapping_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_wrapping"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.wrapping', true), '')::oid::regclass) + 1 - (((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) & 1073741823) << 18) | 281474976710656)) & 281474976187391) - 1)
            & -1024) = 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.wrapping', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.wrapping', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_wrapping"(pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_wrapping"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields."issue_wrapping_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."take_wrapping_ranges"(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields."issue_wrapping_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."decode_wrapping"(
    id bigint, reference timestamptz, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT ((id >> 18) & 1073741823), ((id >> 10) & 255)::integer,
        (id & 1023)::integer, t.at,
        CASE WHEN t.at BETWEEN -62135596800000 AND 253402300799999
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / 86400000) * interval '1 day'
                + (t.at % 86400000) * interval '1 millisecond') END,
        id > 0
        AND (id >> 48) = 1
    FROM (SELECT w.tick AS at
          FROM (SELECT r.now + (((((id >> 18) & 1073741823) - r.now % 1073741824 + 536870912) % 1073741824) + 1073741824) % 1073741824 - 536870912 AS tick
                FROM (SELECT (u.us - ((u.us % 1000) + 1000) % 1000) / 1000 AS now FROM (SELECT (pg_catalog.extract('epoch', reference) * 1000000)::bigint AS us) AS u) AS r) AS w) AS t;
END;

CREATE OR REPLACE FUNCTION idfields."decode_wrapping"(
    id bigint, OUT "timestamp" bigint, OUT "node" integer, OUT "sequence" integer,
    OUT time_ms bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT * FROM idfields."decode_wrapping"(id, pg_catalog.clock_timestamp());
END;

SELECT pg_catalog.set_config('search_path',
    pg_catalog.current_setting('idfields.install_search_path'), true);

-- drop
DROP FUNCTION IF EXISTS idfields."take_wrapping_ranges"(bigint);
DROP FUNCTION IF EXISTS idfields."take_wrapping"(bigint);
DROP FUNCTION IF EXISTS idfields."next_wrapping"();
DROP FUNCTION IF EXISTS idfields."next_wrapping_at"(bigint);
DROP FUNCTION IF EXISTS idfields."issue_wrapping_ranges"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_wrapping_at"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_wrapping"(regclass);
DO $fences$
BEGIN
    FOR node IN 0..255 LOOP
        EXECUTE pg_catalog.format('DROP SEQUENCE IF EXISTS idfields.%I', 'fence_414282409_' || node % 1024);
    END LOOP;
END
$fences$;
DROP FUNCTION IF EXISTS idfields."decode_wrapping"(bigint, timestamptz);
DROP FUNCTION IF EXISTS idfields."decode_wrapping"(bigint);
