-- The database-side ID functions of one time-based layout, rendered by idfields.sql.layouts for
-- user layouts (InstallLayoutFunctions) and for the built-in snowflake and traceid (written into
-- the SQL version's file). Each section starts at a line "-- @@ <name>" and runs to the next;
-- @name@ is a value the renderer fills in: a quoted identifier, a literal, or an SQL expression
-- it computes from the layout's geometry. These header lines are not a section.
--
-- The hot path, next_<name>(), is one PL/pgSQL call run as the owner (no SET clause: every
-- name in it is qualified), whose one expression inlines next_<name>_on(): it binds the
-- session's two sequences of the layout when PL/pgSQL plans it, once a session (window_<name>()
-- and position_<name>(), which make them through open_<name>() where missing), and issues
-- inside the window the owner wrote for the session (D9 of
-- docs/explanation/lease-protocol-database.md), moving the position only the owner writes.
-- Anything else is one PL/pgSQL call, the issuer (issue_<name>()), run as the owner, which
-- hands it to idfields.time_next() with the geometry written in as literals. No function a
-- caller may run takes a geometry, lease key or tick; next_<name>_on(), the test hook's
-- next_<name>_at(), next_<name>_at_on() and issue_<name>_at() are revoked from PUBLIC.

-- @@ user_layout
-- idfields: ID functions of layout @name@, from idfields.sql.layouts.
SELECT pg_catalog.set_config('idfields.install_search_path',
    pg_catalog.current_setting('search_path'), true);
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

@functions@@decoder@
SELECT pg_catalog.set_config('search_path',
    pg_catalog.current_setting('idfields.install_search_path'), true);
-- @@ functions
-- The layout's durable fences (D7), idfields.fence_<lease_lock_key(lease key)>_<node % 1024>.
DO $fences$
BEGIN
    FOR node IN @fence_first@..@fence_last@ LOOP
        EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS idfields.%I MINVALUE 0 START 0',
            '@fence@' || node % 1024);
        EXECUTE pg_catalog.format('REVOKE ALL ON SEQUENCE idfields.%I FROM PUBLIC',
            '@fence@' || node % 1024);
        EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE idfields.%I TO PUBLIC',
            '@fence@' || node % 1024);
    END LOOP;
END
$fences$;

CREATE OR REPLACE FUNCTION idfields.@issue@(visible_lease regclass) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(@next_arguments@);
END
$$;

CREATE OR REPLACE FUNCTION idfields.@issue_at@(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_next(@next_at_arguments@);
END
$$;
REVOKE ALL ON FUNCTION idfields.@issue_at@(bigint, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields.@issue_ranges@(
    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 250 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT r.first_id, r.last_id
    FROM idfields.take_id_ranges(@ranges_arguments@) AS r;
END
$$;

CREATE OR REPLACE FUNCTION idfields.@open@() RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN idfields.time_session(@layout@);
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
CREATE OR REPLACE FUNCTION idfields.@window@() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    IF pg_catalog.pg_is_in_recovery() OR NOT COALESCE(pg_catalog.oideq(
            pg_catalog.to_regclass('idfields_node_lease')::pg_catalog.oid,
            idfields.lease_table()::pg_catalog.oid), true)
        OR (pg_catalog.to_regclass(@window_name@) IS NULL
            OR pg_catalog.to_regclass(@position_name@) IS NULL)
        AND pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'on'
    THEN
        PERFORM idfields.@issue@(pg_catalog.to_regclass('idfields_node_lease'));
        RETURN NULL;
    END IF;
    RETURN idfields.@open@();
END
$$;

CREATE OR REPLACE FUNCTION idfields.@position@() RETURNS regclass
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE SECURITY DEFINER
AS $$
BEGIN
    PERFORM idfields.@open@();
    RETURN pg_catalog.to_regclass(@position_name@);
END
$$;

CREATE OR REPLACE FUNCTION idfields.@hook_on@(bound regclass, issued regclass, now_tick bigint)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, @hook_checked@),
        idfields.@issue_at@(now_tick, pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields.@hook_on@(regclass, regclass, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields.@hook@(now_tick bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields.@hook_on@(idfields.@window@(), idfields.@position@(), now_tick);
END
$$;
REVOKE ALL ON FUNCTION idfields.@hook@(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields.@next_on@(bound regclass, issued regclass) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT COALESCE(pg_catalog.setval(issued, @next_checked@),
        idfields.@issue@(pg_catalog.to_regclass('idfields_node_lease')));
END;
REVOKE ALL ON FUNCTION idfields.@next_on@(regclass, regclass) FROM PUBLIC;

-- COST 1: a bulk INSERT is not costed (and JIT-compiled) as if each row ran a statement.
CREATE OR REPLACE FUNCTION idfields.@next@() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
AS $$
BEGIN
    RETURN idfields.@next_on@(idfields.@window@(), idfields.@position@());
END
$$;

CREATE OR REPLACE FUNCTION idfields.@take@(n bigint) RETURNS SETOF bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT pg_catalog.generate_series(r.first_id, r.last_id)
    FROM idfields.@issue_ranges@(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

CREATE OR REPLACE FUNCTION idfields.@take_ranges@(
    n bigint, OUT first_id bigint, OUT last_id bigint
) RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250
BEGIN ATOMIC
    SELECT r.first_id, r.last_id
    FROM idfields.@issue_ranges@(n, pg_catalog.to_regclass('idfields_node_lease')) AS r;
END;

-- @@ growing_checked
NULLIF(LEAST(pg_catalog.int8larger(@successor@,
            @lowest@) | (pg_catalog.pg_sequence_last_value(bound) & @middle@),
        pg_catalog.pg_sequence_last_value(bound)),
        pg_catalog.pg_sequence_last_value(bound))
-- @@ wrapping_checked
CASE WHEN ((pg_catalog.pg_sequence_last_value(bound) >> @ts_shift@) - @now@)
            & @period_mask@ <= 1
        THEN NULLIF(LEAST(pg_catalog.int8larger(@successor@,
            (pg_catalog.pg_sequence_last_value(bound) & @not_low@) | @seq_min@)
            | (pg_catalog.pg_sequence_last_value(bound) & @middle@),
            pg_catalog.pg_sequence_last_value(bound)),
            pg_catalog.pg_sequence_last_value(bound)) END
-- @@ successor
(((pg_catalog.pg_sequence_last_value(issued) | @middle@) + 1) & @not_middle@)
-- @@ decoder
CREATE OR REPLACE FUNCTION idfields.@decoder@(
    id bigint, @reference@OUT @stamp@ bigint, OUT @node@ integer, OUT @sequence@ @seq_type@,
    OUT time_@time_unit@ bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT @stamp_value@, @node_value@::integer,
        @sequence_value@::@seq_type@, t.at,
        CASE WHEN t.at BETWEEN @first_at@ AND @last_at@
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / @per_day@) * interval '1 day'
                + (t.at % @per_day@) * interval '1 @unit_name@') END,
        @checks@
    FROM (SELECT @at@ AS at
          FROM (@tick@) AS w) AS t;
END;
-- @@ decoder_at_clock
CREATE OR REPLACE FUNCTION idfields.@decoder@(
    id bigint, OUT @stamp@ bigint, OUT @node@ integer, OUT @sequence@ @seq_type@,
    OUT time_@time_unit@ bigint, OUT "time" timestamptz, OUT in_layout boolean
)
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT * FROM idfields.@decoder@(id, pg_catalog.clock_timestamp());
END;
-- @@ growing_tick
SELECT @raw@ AS tick
-- @@ wrapping_tick
SELECT r.now + (((@raw@ - r.now % @radix@ + @half@) % @radix@) + @radix@) % @radix@ - @half@ AS tick
                FROM (@now@) AS r
-- @@ drop_functions
DROP FUNCTION IF EXISTS idfields.@take_ranges@(bigint);
DROP FUNCTION IF EXISTS idfields.@take@(bigint);
DROP FUNCTION IF EXISTS idfields.@next@();
DROP FUNCTION IF EXISTS idfields.@next_on@(regclass, regclass);
DROP FUNCTION IF EXISTS idfields.@hook@(bigint);
DROP FUNCTION IF EXISTS idfields.@hook_on@(regclass, regclass, bigint);
DROP FUNCTION IF EXISTS idfields.@position@();
DROP FUNCTION IF EXISTS idfields.@window@();
DROP FUNCTION IF EXISTS idfields.@open@();
DROP FUNCTION IF EXISTS idfields.@issue_ranges@(bigint, regclass);
DROP FUNCTION IF EXISTS idfields.@issue_at@(bigint, regclass);
DROP FUNCTION IF EXISTS idfields.@issue@(regclass);
DO $fences$
BEGIN
    FOR node IN @fence_first@..@fence_last@ LOOP
        EXECUTE pg_catalog.format('DROP SEQUENCE IF EXISTS idfields.%I', '@fence@' || node % 1024);
    END LOOP;
END
$fences$;
-- @@ drop_decoder_at_reference
DROP FUNCTION IF EXISTS idfields.@decoder@(bigint, timestamptz);
-- @@ drop_decoder
DROP FUNCTION IF EXISTS idfields.@decoder@(bigint);
