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
BEGIN
    RETURN idfields.time_next(ROW('wrapping', 'wrapping#5a22352cf624', 0, 1000, 30, 18, true, 10, 0, 255, 10, 0, 281474976710656, 1000, 2000)::idfields.geometry, ((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000), visible_lease, 281474976710656);
END
$$;

CREATE OR REPLACE FUNCTION idfields."issue_wrapping_at"(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(ROW('wrapping', 'wrapping#5a22352cf624', 0, 1000, 30, 18, true, 10, 0, 255, 10, 0, 281474976710656, 1000, 2000)::idfields.geometry, COALESCE(now_tick, ((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000)), visible_lease, 281474976710656);
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

CREATE OR REPLACE FUNCTION idfields."open_wrapping"() RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_session('wrapping');
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
CREATE OR REPLACE FUNCTION idfields."window_wrapping"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    IF pg_catalog.pg_is_in_recovery() OR NOT COALESCE(pg_catalog.oideq(
            pg_catalog.to_regclass('idfields_node_lease')::pg_catalog.oid,
            idfields.lease_table()::pg_catalog.oid), true)
        OR (pg_catalog.to_regclass('pg_temp."idfields:wrapping"') IS NULL
            OR pg_catalog.to_regclass('pg_temp."idfields_wrapping"') IS NULL)
        AND pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'on'
    THEN
        PERFORM idfields."issue_wrapping"(pg_catalog.to_regclass('idfields_node_lease'));
        RETURN NULL;
    END IF;
    RETURN idfields."open_wrapping"();
END
$$;

CREATE OR REPLACE FUNCTION idfields."position_wrapping"() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    PERFORM idfields."open_wrapping"();
    RETURN pg_catalog.to_regclass('pg_temp."idfields_wrapping"');
END
$$;

CREATE OR REPLACE FUNCTION idfields."next_wrapping_at_on"(bound regclass, issued regclass, now_tick bigint)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, CASE WHEN ((pg_catalog.pg_sequence_last_value(bound) >> 18) - now_tick)
            & '1073741823'::bigint <= 1
        THEN NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '261120'::bigint) + 1) & '-261121'::bigint),
            (pg_catalog.pg_sequence_last_value(bound) & '-262144'::bigint) | '0'::bigint)
            | (pg_catalog.pg_sequence_last_value(bound) & '261120'::bigint),
            pg_catalog.pg_sequence_last_value(bound)),
            pg_catalog.pg_sequence_last_value(bound)) END),
        idfields."issue_wrapping_at"(now_tick, pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_wrapping_at_on"(regclass, regclass, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_wrapping_at"(now_tick bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_wrapping_at_on"(idfields."window_wrapping"(), idfields."position_wrapping"(), now_tick);
END
$$;
REVOKE ALL ON FUNCTION idfields."next_wrapping_at"(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields."next_wrapping_on"(bound regclass, issued regclass) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, CASE WHEN ((pg_catalog.pg_sequence_last_value(bound) >> 18) - ((pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * '1000000'::double precision)::bigint / 1000))
            & '1073741823'::bigint <= 1
        THEN NULLIF(LEAST(pg_catalog.int8larger((((pg_catalog.pg_sequence_last_value(issued) | '261120'::bigint) + 1) & '-261121'::bigint),
            (pg_catalog.pg_sequence_last_value(bound) & '-262144'::bigint) | '0'::bigint)
            | (pg_catalog.pg_sequence_last_value(bound) & '261120'::bigint),
            pg_catalog.pg_sequence_last_value(bound)),
            pg_catalog.pg_sequence_last_value(bound)) END),
        idfields."issue_wrapping"(pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields."next_wrapping_on"(regclass, regclass) FROM PUBLIC;

-- COST 1: a bulk INSERT is not costed (and JIT-compiled) as if each row ran a statement.
CREATE OR REPLACE FUNCTION idfields."next_wrapping"() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields."next_wrapping_on"(idfields."window_wrapping"(), idfields."position_wrapping"());
END
$$;

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
DROP FUNCTION IF EXISTS idfields."next_wrapping_on"(regclass, regclass);
DROP FUNCTION IF EXISTS idfields."next_wrapping_at"(bigint);
DROP FUNCTION IF EXISTS idfields."next_wrapping_at_on"(regclass, regclass, bigint);
DROP FUNCTION IF EXISTS idfields."position_wrapping"();
DROP FUNCTION IF EXISTS idfields."window_wrapping"();
DROP FUNCTION IF EXISTS idfields."open_wrapping"();
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
