"""Cutting SQL scripts into statements as psql does, and ``%s`` queries into named parameters."""

from __future__ import annotations

import re

from idfields import sql
from idfields.layouts import Layout, Node, Sequence, Timestamp
from idfields.sql.layouts import render_layout_function
from idfields.sql.scripts import named_params, named_placeholders, qualify, statements
from tests.pg.sample_layouts import LAYOUTS


def test_semicolons_inside_strings_names_comments_and_bodies_do_not_cut() -> None:
    script = """
    -- a comment; with a semicolon
    SELECT 'a;b', "odd;name", 'it''s; fine' /* block; comment */ FROM t;
    CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$
    BEGIN
        RETURN 1; -- inside the body; kept
    END
    $body$;
    DO $$ BEGIN PERFORM 1; END $$;
    SELECT $1::int;
    """
    assert statements(script) == [
        "SELECT 'a;b', \"odd;name\", 'it''s; fine'   FROM t",
        "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$\n"
        "    BEGIN\n        RETURN 1; -- inside the body; kept\n    END\n    $body$",
        "DO $$ BEGIN PERFORM 1; END $$",
        "SELECT $1::int",
    ]


def test_begin_atomic_bodies_are_one_statement_but_transactions_are_not() -> None:
    script = """
    BEGIN;
    CREATE OR REPLACE FUNCTION g(x int) RETURNS int
    BEGIN ATOMIC
        SELECT CASE WHEN x > 0 THEN 1 ELSE 0 END;
        SELECT 2;
    END;
    create procedure p() begin atomic select 1; end;
    COMMIT;
    """
    found = statements(script)
    assert [statement.split()[0] for statement in found] == ["BEGIN", "CREATE", "create", "COMMIT"]
    assert found[1].endswith("SELECT 2;\n    END")


def test_the_shipped_scripts_cut_into_whole_statements() -> None:
    """Each statement of the install script, the drop script and a layout's functions starts
    with a command word: no cut fell inside a body."""
    commands = {"SELECT", "CREATE", "DO", "REVOKE", "GRANT", "COMMENT", "DROP"}
    scripts = [
        sql.load(sql.VERSION),
        sql.load_drop(sql.VERSION),
        *render_layout_function(Layout("scripted", [Timestamp(41), Node(8), Sequence(14)])),
    ]
    for script in scripts:
        found = statements(script)
        assert found and {statement.split()[0] for statement in found} <= commands
    assert (
        statements(scripts[0])[-2] == f"COMMENT ON SCHEMA idfields IS 'idfields SQL {sql.VERSION}'"
    )


#: The most lines one function of the installed SQL may take, header to body's end: each reads as
#: one step, and a longer one is cut into named steps (as time_slow_path() is).
MOST_LINES = 100


def test_no_function_of_the_installed_sql_is_over_100_lines() -> None:
    """The install script's functions, the built-in layouts' among them, and every sample user
    layout's rendered ones."""
    scripts = [sql.load(sql.VERSION)]
    scripts += [render_layout_function(layout)[0] for layout in LAYOUTS]
    sizes = {
        match[1]: len(statement.splitlines())
        for script in scripts
        for statement in statements(script)
        if (match := re.match(r"CREATE (?:OR REPLACE )?FUNCTION (\S+?)\(", statement))
    }
    assert "idfields.time_slow_path" in sizes and "idfields.decimal_slow_path" in sizes
    too_long = {name: lines for name, lines in sizes.items() if lines > MOST_LINES}
    assert not too_long, f"cut these into named steps of at most {MOST_LINES} lines: {too_long}"


def test_named_placeholders() -> None:
    query = "SELECT a::text FROM t WHERE b = %s AND c LIKE '%%x' AND d = %s"
    assert named_placeholders(query) == (
        "SELECT a\\:\\:text FROM t WHERE b = :p0 AND c LIKE '%x' AND d = :p1"
    )
    assert named_params(["x", 2]) == {"p0": "x", "p1": 2}


def test_qualify_names_the_tables_in_code_and_in_regclass_strings_only() -> None:
    query = (
        "SELECT to_regclass('idfields_node_lease'), md5('idfields_node_lease:' || x) "
        "FROM idfields_node_lease JOIN idfields_counter_x ON true -- idfields_node_lease"
    )
    assert qualify(query, {"idfields_node_lease"}, '"O\'k".') == (
        "SELECT to_regclass('\"O''k\".idfields_node_lease'), md5('idfields_node_lease:' || x) "
        'FROM "O\'k".idfields_node_lease JOIN idfields_counter_x ON true -- idfields_node_lease'
    )
