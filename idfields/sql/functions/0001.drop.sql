-- Removes what 0001.sql installed, its schema included.
-- No CASCADE: a column default that still calls a function makes this fail, instead of
-- silently dropping the default.
DROP FUNCTION IF EXISTS idfields.decode_decimal(bigint);
DROP FUNCTION IF EXISTS idfields.decode_traceid(bigint);
DROP FUNCTION IF EXISTS idfields.decode_traceid(bigint, timestamptz);
DROP FUNCTION IF EXISTS idfields.decode_snowflake(bigint);
DROP VIEW IF EXISTS idfields.node_holders;
DROP FUNCTION IF EXISTS idfields.node_holder_rows();
DROP FUNCTION IF EXISTS idfields.next_decimal();
DROP FUNCTION IF EXISTS idfields.decimal_position();
DROP FUNCTION IF EXISTS idfields.decimal_slow_path();
DROP FUNCTION IF EXISTS idfields.decimal_take_generator(integer, integer, bigint);
DROP FUNCTION IF EXISTS idfields.decimal_cover_generator(integer, bigint);
DROP SEQUENCE IF EXISTS idfields.decimal_issued;
-- BEGIN built-in layouts, as idfields.sql.layouts renders them
DROP FUNCTION IF EXISTS idfields."take_snowflake_ranges"(bigint);
DROP FUNCTION IF EXISTS idfields."take_snowflake"(bigint);
DROP FUNCTION IF EXISTS idfields."next_snowflake"();
DROP FUNCTION IF EXISTS idfields."next_snowflake_on"(regclass, regclass);
DROP FUNCTION IF EXISTS idfields."next_snowflake_at"(bigint);
DROP FUNCTION IF EXISTS idfields."next_snowflake_at_on"(regclass, regclass, bigint);
DROP FUNCTION IF EXISTS idfields."position_snowflake"();
DROP FUNCTION IF EXISTS idfields."window_snowflake"();
DROP FUNCTION IF EXISTS idfields."open_snowflake"();
DROP FUNCTION IF EXISTS idfields."issue_snowflake_ranges"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_snowflake_at"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_snowflake"(regclass);
DO $fences$
BEGIN
    FOR node IN 0..1023 LOOP
        EXECUTE pg_catalog.format('DROP SEQUENCE IF EXISTS idfields.%I', 'fence_1311434018_' || node % 1024);
    END LOOP;
END
$fences$;
DROP FUNCTION IF EXISTS idfields."take_traceid_ranges"(bigint);
DROP FUNCTION IF EXISTS idfields."take_traceid"(bigint);
DROP FUNCTION IF EXISTS idfields."next_traceid"();
DROP FUNCTION IF EXISTS idfields."next_traceid_on"(regclass, regclass);
DROP FUNCTION IF EXISTS idfields."next_traceid_at"(bigint);
DROP FUNCTION IF EXISTS idfields."next_traceid_at_on"(regclass, regclass, bigint);
DROP FUNCTION IF EXISTS idfields."position_traceid"();
DROP FUNCTION IF EXISTS idfields."window_traceid"();
DROP FUNCTION IF EXISTS idfields."open_traceid"();
DROP FUNCTION IF EXISTS idfields."issue_traceid_ranges"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_traceid_at"(bigint, regclass);
DROP FUNCTION IF EXISTS idfields."issue_traceid"(regclass);
DO $fences$
BEGIN
    FOR node IN 0..1023 LOOP
        EXECUTE pg_catalog.format('DROP SEQUENCE IF EXISTS idfields.%I', 'fence_1705534813_' || node % 1024);
    END LOOP;
END
$fences$;
-- END built-in layouts
DROP FUNCTION IF EXISTS idfields.time_next(idfields.geometry, bigint, regclass, bigint);
DROP FUNCTION IF EXISTS idfields.take_id_ranges(idfields.geometry, bigint, regclass);
DROP FUNCTION IF EXISTS idfields.lease_table();
DROP FUNCTION IF EXISTS idfields.node_range();
DROP FUNCTION IF EXISTS idfields.time_slow_path(idfields.geometry, bigint, regclass);
DROP FUNCTION IF EXISTS idfields.time_record_claim(idfields.geometry, regclass, integer, bigint,
    bigint, integer, bigint, bigint, text);
DROP FUNCTION IF EXISTS idfields.time_renew(idfields.geometry, integer, bigint, bigint, bigint,
    bigint, bigint, bigint, bigint, integer, bigint, bigint, text);
DROP FUNCTION IF EXISTS idfields.time_session_claim(idfields.geometry, regclass, bigint, bigint);
DROP FUNCTION IF EXISTS idfields.time_claim(idfields.geometry, integer, bigint, bigint, bigint,
    bigint, integer, integer, bigint, bigint);
DROP FUNCTION IF EXISTS idfields.time_take_back_node(idfields.geometry, integer, bigint, bigint,
    bigint, integer, text, bigint);
DROP FUNCTION IF EXISTS idfields.time_claim_leased_node(idfields.geometry, integer, bigint,
    bigint, bigint, integer, integer, text, bigint, integer);
DROP FUNCTION IF EXISTS idfields.time_claim_new_node(idfields.geometry, integer, bigint, bigint,
    bigint, integer, integer, text, bigint, integer);
DROP FUNCTION IF EXISTS idfields.time_wait_for_clock(text, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS idfields.time_refuse(text, text, regclass);
DROP FUNCTION IF EXISTS idfields.time_session(text);
DROP FUNCTION IF EXISTS idfields.time_window(text);
DROP FUNCTION IF EXISTS idfields.time_sequence(text);
DROP FUNCTION IF EXISTS idfields.session_sequence(text, text);
DROP TYPE IF EXISTS idfields.geometry;
DROP FUNCTION IF EXISTS idfields.commit_durably();
DROP FUNCTION IF EXISTS idfields.database_epoch(bigint);
DROP FUNCTION IF EXISTS idfields.record_epoch(text, bigint, bigint, boolean, bigint);
DROP FUNCTION IF EXISTS idfields.record_change_launch(text);
DROP FUNCTION IF EXISTS idfields.raise_node_fence(integer, integer, bigint);
DROP FUNCTION IF EXISTS idfields.node_fence_ms(integer, integer);
DROP FUNCTION IF EXISTS idfields.fence_sequence(integer, integer);
DROP FUNCTION IF EXISTS idfields.clock_us();
DROP FUNCTION IF EXISTS idfields.clock_ms();
DROP FUNCTION IF EXISTS idfields.backend_holder();
DROP FUNCTION IF EXISTS idfields.lease_lock_key(text);
DROP SCHEMA IF EXISTS idfields;
