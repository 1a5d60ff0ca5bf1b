CREATE OR REPLACE FUNCTION idfields."issue_snowflake"(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.snowflake_lease', true);
    tick bigint := (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000);
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_snowflake')::oid::text
            AND (pg_catalog.current_setting('idfields.snowflake', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 12;
    next_id bigint := GREATEST(last + 1, (tick << 22) | base);
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF ((last # base) | (next_id # base)) & -9223372036850585600 = 0
        AND next_id >> 22 <= tick + 1000
        AND next_id >> 22 <= NULLIF(pg_catalog.current_setting('idfields.snowflake_limit', true), '')::bigint
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.snowflake', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        'snowflake', 'snowflake', tick, 1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000, visible_lease, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_snowflake_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.snowflake_lease', true);
    tick bigint := COALESCE(now_tick, (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000));
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_snowflake')::oid::text
            AND (pg_catalog.current_setting('idfields.snowflake', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 12;
    next_id bigint := GREATEST(last + 1, (tick << 22) | base);
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF ((last # base) | (next_id # base)) & -9223372036850585600 = 0
        AND next_id >> 22 <= tick + 1000
        AND next_id >> 22 <= NULLIF(pg_catalog.current_setting('idfields.snowflake_limit', true), '')::bigint
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.snowflake', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        'snowflake', 'snowflake', tick, 1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000, visible_lease, 0);
END
$$;
REVOKE ALL ON FUNCTION idfields."issue_snowflake_at"(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."issue_snowflake_ranges"(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges('snowflake', 'snowflake', n, 1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000, visible_lease) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_snowflake_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.snowflake', true), '')::oid::regclass) + 1 - (now_tick << 22)) & -9223372036854771713) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.snowflake', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.snowflake', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_snowflake_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_snowflake_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_snowflake"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.snowflake', true), '')::oid::regclass) + 1 - ((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) - 1704067200000) << 22)) & -9223372036854771713) > 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.snowflake', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.snowflake', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_snowflake"(pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_snowflake"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields."issue_snowflake_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."take_snowflake_ranges"(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields."issue_snowflake_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."issue_traceid"(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.traceid_lease', true);
    tick bigint := (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) / 1000);
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_traceid')::oid::text
            AND (pg_catalog.current_setting('idfields.traceid', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 22 | 1;
    next_id bigint := last + 1;
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF (last # base) & -9223371761981063168 = 0
        AND tick <= NULLIF(pg_catalog.current_setting('idfields.traceid_limit', true), '')::bigint
        AND ((((next_id - ((tick & 33554431) << 38)) & 9223371487103156223) - 1)
            & -4194304) = 0
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.traceid', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        'traceid', 'traceid', tick, 0, 1000000, 25, 38, true, 22, 0, 65535, 22, 1, 0, 1, 5000, visible_lease, 0);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_traceid_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claim text := pg_catalog.current_setting('idfields.traceid_lease', true);
    tick bigint := COALESCE(now_tick, (((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) / 1000));
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass('pg_temp.idfields_traceid')::oid::text
            AND (pg_catalog.current_setting('idfields.traceid', true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << 22 | 1;
    next_id bigint := last + 1;
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF (last # base) & -9223371761981063168 = 0
        AND tick <= NULLIF(pg_catalog.current_setting('idfields.traceid_limit', true), '')::bigint
        AND ((((next_id - ((tick & 33554431) << 38)) & 9223371487103156223) - 1)
            & -4194304) = 0
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config('idfields.traceid', pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        'traceid', 'traceid', tick, 0, 1000000, 25, 38, true, 22, 0, 65535, 22, 1, 0, 1, 5000, visible_lease, 0);
END
$$;
REVOKE ALL ON FUNCTION idfields."issue_traceid_at"(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."issue_traceid_ranges"(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges('traceid', 'traceid', n, 0, 1000000, 25, 38, true, 22, 0, 65535, 22, 1, 0, 1, 5000, visible_lease) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_traceid_at"(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.traceid', true), '')::oid::regclass) + 1 - ((now_tick & 33554431) << 38)) & 9223371487103156223) - 1)
            & -4194304) = 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.traceid', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.traceid', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_traceid_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields."next_traceid_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_traceid"() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN ((((pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.traceid', true), '')::oid::regclass) + 1 - (((((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000) / 1000) & 33554431) << 38)) & 9223371487103156223) - 1)
            & -4194304) = 0
        THEN pg_catalog.setval(NULLIF(pg_catalog.current_setting('idfields.traceid', true), '')::oid::regclass, pg_catalog.currval(NULLIF(pg_catalog.current_setting('idfields.traceid', true), '')::oid::regclass) + 1)
        ELSE idfields."issue_traceid"(pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

CREATE OR REPLACE FUNCTION idfields."take_traceid"(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields."issue_traceid_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields."take_traceid_ranges"(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields."issue_traceid_ranges"(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;


-- drop
DROP FUNCTION IF EXISTS idfields."take_snowflake_ranges"(bigint);
DROP FUNCTION IF EXISTS idfields."take_snowflake"(bigint);
DROP FUNCTION IF EXISTS idfields."next_snowflake"();
DROP FUNCTION IF EXISTS idfields."next_snowflake_at"(bigint);
DROP FUNCTION IF EXISTS idfields."issue_snowflake_ranges"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_snowflake_at"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_snowflake"(regclass);
DROP FUNCTION IF EXISTS idfields."take_traceid_ranges"(bigint);
DROP FUNCTION IF EXISTS idfields."take_traceid"(bigint);
DROP FUNCTION IF EXISTS idfields."next_traceid"();
DROP FUNCTION IF EXISTS idfields."next_traceid_at"(bigint);
DROP FUNCTION IF EXISTS idfields."issue_traceid_ranges"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_traceid_at"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_traceid"(regclass);
