-- The database-side ID functions of one time-based layout, rendered by idfields.sql.layouts for
-- user layouts (InstallLayoutFunctions) and for the built-in snowflake and traceid (written into
-- the SQL version's file). Each section starts at a line "-- @@ <name>" and runs to the next;
-- @name@ is a value the renderer fills in: a quoted identifier, a literal, or an SQL expression
-- it computes from the layout's geometry. These header lines are not a section.
--
-- Beyond its common case the inlined hot path (next_<name>()) makes one PL/pgSQL call, the
-- issuer (issue_<name>()), which runs as the owner, checks a transaction's first ID (and, for a
-- growing layout, an ID in a new tick) with the geometry written in as literals, and hands
-- anything else to idfields.time_next(). The issuers take no geometry, lease key or tick from
-- the caller; the test hook's issue_<name>_at() and next_<name>_at() are revoked from PUBLIC.

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
@issue_body@
CREATE OR REPLACE FUNCTION idfields.@issue_at@(now_tick bigint, visible_lease regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
@issue_at_body@REVOKE ALL ON FUNCTION idfields.@issue_at@(bigint, regclass) FROM PUBLIC;

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

CREATE OR REPLACE FUNCTION idfields.@hook@(now_tick bigint) RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN @hook_test@
        THEN pg_catalog.setval(@sequence@, @candidate@)
        ELSE idfields.@issue_at@(now_tick, pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;
REVOKE ALL ON FUNCTION idfields.@hook@(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idfields.@next@() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT CASE
        WHEN @next_test@
        THEN pg_catalog.setval(@sequence@, @candidate@)
        ELSE idfields.@issue@(pg_catalog.to_regclass('idfields_node_lease'))
    END;
END;

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

-- @@ issuer_body
DECLARE
    claim text := pg_catalog.current_setting(@lease_setting@, true);
    tick bigint := @tick@;
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN pg_catalog.split_part(claim, ':', 4) = pg_catalog.to_regclass(@own_sequence@)::oid::text
            AND (pg_catalog.current_setting(@switch@, true) <> ''
            OR pg_catalog.split_part(claim, ':', 6) = COALESCE(visible_lease::oid::text, pg_catalog.split_part(claim, ':', 6))
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF(pg_catalog.split_part(claim, ':', 4), '')::oid END);
    base bigint := NULLIF(pg_catalog.split_part(claim, ':', 1), '')::bigint << @node_shift@@base_low@;
    next_id bigint := @next_id@;
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF @issuer_test@
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config(@switch@, pg_catalog.split_part(claim, ':', 4), true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        @next_arguments@);
END
$$;
-- @@ growing_next_id
GREATEST(last + 1, (tick << @ts_shift@) | base)
-- @@ wrapping_next_id
last + 1
-- @@ growing_issuer_test
((last # base) | (next_id # base)) & @others@ = 0
        AND @tick_of_next@ <= tick + @max_ahead@
        AND @tick_of_next@ <= @limit@
-- @@ wrapping_issuer_test
(last # base) & @others@ = 0
        AND tick <= @limit@
        AND @window_test@
-- @@ sequence
NULLIF(pg_catalog.current_setting(@switch@, true), '')::oid::regclass
-- @@ limit
NULLIF(pg_catalog.current_setting(@limit_setting@, true), '')::bigint
-- @@ growing_test
((@candidate@ - @now_bits@) & @window_mask@) > 0
-- @@ wrapping_test
((((@candidate@ - @now_bits@) & @kept@) - 1)
            & @carry_mask@) = 0
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
DROP FUNCTION IF EXISTS idfields.@hook@(bigint);
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
