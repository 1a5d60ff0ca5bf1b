"""The ``idfields`` command: real values out, and every bad input one line on stderr, status 2."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from importlib.metadata import entry_points
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from idfields import codecs
from idfields.cli import main
from idfields.layouts import BUILTIN_LAYOUTS, MAX_ID, get_layout

ROOT = Path(__file__).resolve().parent.parent
KEY = "9e1d4c2b7a6f58e3d0c1b2a3948576f6e5d4c3b2a1908f7e6d5c4b3a29180706"  # a test key
NODE_VARIABLES = (
    "IDFIELDS_NODE_ID",
    "IDFIELDS_GENERATOR_ID",
    "IDFIELDS_LAUNCH_ID",
    "IDFIELDS_DEVELOPMENT",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No node or key leaks in from the machine running the tests."""
    for name in (*NODE_VARIABLES, codecs.DEFAULT_ENV_VAR):
        monkeypatch.delenv(name, raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status, out, err = run(capsys, *argv, "--json")
    assert (status, err) == (0, "")
    document: dict[str, Any] = json.loads(out)
    return document


# -- layouts ------------------------------------------------------------------------------------


def test_layouts_json_describes_every_builtin(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "layouts")
    by_name = {entry["name"]: entry for entry in document["layouts"]}
    assert list(by_name) == list(BUILTIN_LAYOUTS)
    snowflake = by_name["snowflake"]
    assert snowflake["ids_per_second_per_node"] == 4_096_000
    assert snowflake["nodes"] == 1024
    assert snowflake["runs_out"].startswith("2093-")  # 2**41 ms after 2024-01-01: 69 years
    assert [(f["name"], f["width"]) for f in snowflake["fields"]] == [
        ("timestamp", 41),
        ("node", 10),
        ("sequence", 12),
    ]
    assert by_name["traceid"]["runs_out"] == "wraps every 388.4 days"
    assert by_name["decimal"]["max_id"] == 922_337_202_99999_99999
    assert by_name["snowflake_js"]["js_safe"] is True
    assert by_name["snowflake_js"]["max_id"] < 2**53


def test_layouts_table_is_aligned(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "layouts")
    lines = out.splitlines()
    header, rows = lines[0], lines[1 : 1 + len(BUILTIN_LAYOUTS)]
    assert status == 0
    assert [row.split()[0] for row in rows] == list(BUILTIN_LAYOUTS)
    fields_at = header.index("fields")
    nodes_end = header.index("nodes") + len("nodes")
    for row in rows:
        assert row[fields_at - 2 : fields_at] == "  " and row[fields_at] != " "
        assert row[nodes_end - 1].isdigit() and row[nodes_end] == " "  # numbers right-aligned
    snowflake = rows[0]
    assert "4,096,000" in snowflake and "1,024" in snowflake and "2093-09-06" in snowflake


# -- new ----------------------------------------------------------------------------------------


def test_new_gives_distinct_increasing_ids_of_the_node(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "new", "--layout", "snowflake", "--node", "7", "--count", "1000")
    ids = [int(line) for line in out.splitlines()]
    assert (status, err, len(ids)) == (0, "", 1000)
    assert all(a < b for a, b in pairwise(ids))
    snowflake = get_layout("snowflake")
    assert {snowflake.decode(value).values["node"] for value in ids} == {7}
    now = datetime.now(UTC)
    issued = snowflake.decode(ids[-1]).time
    assert issued is not None and abs((now - issued).total_seconds()) < 5


def test_new_defaults_to_one_snowflake(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "new", "--node", "3")
    assert document["layout"] == "snowflake" and document["node"] == {"node": 3}
    [value] = document["ids"]
    assert get_layout("snowflake").decode(value).values["node"] == 3


def test_new_base62_column_decodes_to_the_ids(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "new", "--node", "5", "--count", "50", "--base62")
    assert [codecs.decode(text) for text in document["base62"]] == document["ids"]
    status, out, _ = run(capsys, "new", "--node", "5", "--count", "3", "--base62")
    header, *rows = out.splitlines()
    assert status == 0 and header.split() == ["id", "base62"]
    for row in rows:
        value, text = row.split()
        assert codecs.decode(text) == int(value)
        assert row.index(text) == header.index("base62")


def test_new_decimal_takes_named_node_fields(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(
        capsys,
        "new",
        "--layout",
        "decimal",
        "--node",
        "generator_id=92,launch_id=65",
        "--count",
        "3",
    )
    decimal = get_layout("decimal")
    decoded = [decimal.decode(value).values for value in document["ids"]]
    assert {(d["generator_id"], d["launch_id"]) for d in decoded} == {(92, 65)}
    assert [d["counter"] for d in decoded] == [1, 2, 3]


def test_new_reads_the_node_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IDFIELDS_NODE_ID", "9")
    document = run_json(capsys, "new", "--count", "2")
    assert document["node"] == {"node": 9}
    monkeypatch.setenv("IDFIELDS_GENERATOR_ID", "4")
    monkeypatch.setenv("IDFIELDS_LAUNCH_ID", "12")
    document = run_json(capsys, "new", "--layout", "decimal")
    assert get_layout("decimal").decode(document["ids"][0]).values["launch_id"] == 12


@pytest.mark.slow
def test_new_issues_a_million_ids(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "new", "--node", "1", "--count", "1000000")
    ids = [int(line) for line in out.splitlines()]
    assert status == 0 and len(ids) == 1_000_000
    assert all(a < b for a, b in pairwise(ids))


# -- inspect ------------------------------------------------------------------------------------


def test_inspect_the_decimal_id_of_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "inspect", "14150009200065", "--layout", "decimal")
    assert document["fields"] == {"counter": 1415, "generator_id": 92, "launch_id": 65}
    assert document["in_layout"] is True and document["time"] is None
    status, out, _ = run(capsys, "inspect", "14150009200065", "--layout", "decimal")
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert status == 0
    assert (lines["counter"], lines["generator_id"], lines["launch_id"]) == ("1415", "92", "65")
    assert codecs.decode(lines["base62"]) == 14150009200065


def test_inspect_shows_utc_time_and_accepts_base62(capsys: pytest.CaptureFixture[str]) -> None:
    snowflake = get_layout("snowflake")
    moment = datetime(2025, 6, 1, 12, 30, 5, 250_000, tzinfo=UTC)
    tick = snowflake.tick_of(int(moment.timestamp()) * 10**9 + 250_000_000)
    value = snowflake.compose(timestamp=tick, node=513, sequence=4095)
    for argv in (["inspect", str(value)], ["inspect", codecs.encode(value), "--base62"]):
        document = run_json(capsys, *argv)
        assert document["id"] == value
        assert document["fields"] == {"timestamp": tick, "node": 513, "sequence": 4095}
        assert document["time"] == moment.isoformat()
    status, out, _ = run(capsys, "inspect", str(value))
    assert status == 0 and "2025-06-01T12:30:05.250000+00:00" in out


def test_inspect_flags_an_id_outside_the_layout(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "inspect", "5", "--layout", "decimal")  # counter 0
    assert document["in_layout"] is False
    status, out, _ = run(capsys, "inspect", "5", "--layout", "decimal")
    assert status == 0 and "not a decimal ID" in out


# -- encode / decode ----------------------------------------------------------------------------


def test_base62_encode_decode_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    for value in (1, 61, 62, 14150009200065, MAX_ID):
        status, out, _ = run(capsys, "encode", str(value))
        text = out.strip()
        assert status == 0 and codecs.decode(text) == value
        assert run(capsys, "decode", text)[1] == f"{value}\n"
    assert run_json(capsys, "encode", "62") == {"codec": "base62", "id": 62, "base62": "10"}
    assert run_json(capsys, "decode", "10") == run_json(capsys, "encode", "62")


@pytest.mark.parametrize("bits", [53, 63])
def test_permute_round_trip_with_the_key_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, bits: int
) -> None:
    monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, KEY)
    expected = codecs.KeyedPermutation(KEY, bits=bits)
    for value in (1, 2, 3, 14150009200065):
        document = run_json(capsys, "encode", str(value), "--codec", "permute", "--bits", str(bits))
        public = document["public"]
        assert public == expected.encode(value) and public != value and 0 < public < 2**bits
        back = run_json(capsys, "decode", str(public), "--codec", "permute", "--bits", str(bits))
        assert back == document and back["id"] == value


def test_permute_key_never_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, KEY)
    status, out, err = run(capsys, "encode", str(2**53), "--codec", "permute", "--bits", "53")
    assert status == 2 and "out of range" in err
    assert KEY not in out + err
    status, out, _ = run(capsys, "encode", "--help")
    assert status == 0 and codecs.DEFAULT_ENV_VAR in out and KEY not in out


@pytest.mark.parametrize(
    "weak", ["password12345678", "correct horse battery staple 0123456789", "ab" * 32]
)
def test_weak_keys_are_refused_and_not_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, weak: str
) -> None:
    monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, weak)
    for argv in (["key", "check"], ["encode", "5", "--codec", "permute"]):
        status, out, err = run(capsys, *argv)
        assert status == 2 and "idfields key new" in err, argv
        assert weak not in out + err


def test_key_new_gives_a_key_that_key_check_accepts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, KEY)
    for _ in range(64):  # a random key shares the one key id about once in 31 draws
        fresh = run_json(capsys, "key", "new")["key"]
        monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, f"{fresh},{KEY}")
        status, out, err = run(capsys, "key", "check")
        assert status == 0 and "2 key(s)" in out and fresh not in out + err and KEY not in out
        monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, KEY)


def test_key_derive_reads_the_passphrase_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a long and memorable passphrase\n"))
    derived = run_json(capsys, "key", "derive", "--salt", "shop-prod")["key"]
    assert bytes.fromhex(derived) == codecs.derive_key(
        "a long and memorable passphrase", "shop-prod"
    )
    monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, derived)
    assert run(capsys, "key", "check")[0] == 0
    status, _, err = run(capsys, "key", "derive")
    assert status == 2 and "needs --salt" in err


def test_public_strings_round_trip_and_refuse_typos(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(codecs.DEFAULT_ENV_VAR, KEY)
    expected = codecs.PublicIds(KEY, label="shop.order").encode(14150009200065)
    document = run_json(
        capsys, "encode", "14150009200065", "--codec", "public", "--label", "shop.order"
    )
    assert document["public"] == expected
    back = run_json(capsys, "decode", expected, "--codec", "public", "--label", "shop.order")
    assert back == document
    typo = expected[:4] + ("x" if expected[4] != "x" else "y") + expected[5:]
    status, _, err = run(capsys, "decode", typo, "--codec", "public", "--label", "shop.order")
    assert status == 2 and "check character" in err
    status, _, err = run(capsys, "decode", expected, "--codec", "public")
    assert status == 2 and "needs --label" in err


# -- errors -------------------------------------------------------------------------------------

BAD_INPUT = [
    (["inspect", "abc"], "'abc' is not an integer"),
    (["inspect", "-5"], "not positive"),
    (["inspect", "0"], "not positive"),
    (["inspect", str(2**63)], "exceeds 2**63-1"),
    (["encode", str(2**63)], "exceeds 2**63-1"),
    (["inspect", "1", "--layout", "nope"], "unknown layout 'nope'; choose one of snowflake"),
    (["new", "--layout", "nope", "--node", "1"], "unknown layout 'nope'"),
    (["new", "--node", "1024"], "out of range 0..1023"),
    (["new", "--node", "-1"], "out of range 0..1023"),
    (["new", "--node", "seven"], "--node 'seven' is not an integer"),
    (["new", "--layout", "decimal", "--node", "5"], "--node generator_id=N,launch_id=N"),
    (["new", "--layout", "decimal", "--node", "generator_id=92"], "needs ['generator_id'"),
    (["new", "--layout", "decimal", "--node", "generator_id=1,x"], "'x' is not name=value"),
    (["new", "--layout", "decimal", "--node", "generator_id=100000,launch_id=1"], "0..99999"),
    (["new", "--layout", "runid", "--node", "1", "--count", "16385"], "--count 16,384 or less"),
    (["new", "--node", "1", "--count", "0"], "pass 1..1,000,000"),
    (["new", "--node", "1", "--count", "1000001"], "pass 1..1,000,000"),
    (["new", "--node", "1", "--count", "many"], "--count 'many' is not an integer"),
    (["new"], "pass --node N (0..1023) or set IDFIELDS_NODE_ID"),
    (["new", "--layout", "decimal"], "IDFIELDS_GENERATOR_ID and IDFIELDS_LAUNCH_ID"),
    (["decode", "12-4"], "invalid base62 character '-' at position 2"),
    (["inspect", "ab_c", "--base62"], "invalid base62 character '_'"),
    (["decode", "z" * 12], "more than 2**63-1"),
    (["encode", "5", "--codec", "permute"], "IDFIELDS_PERMUTATION_KEY is not set"),
    (["decode", "5", "--codec", "permute"], "IDFIELDS_PERMUTATION_KEY is not set"),
    (["encode", "5", "--codec", "rot13"], "invalid choice: 'rot13'"),
    (["encode", "5", "--codec", "permute", "--bits", "32"], "invalid choice: 32"),
    (["encode", "5", "--bits", "53"], "--bits applies to --codec permute only"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "required: COMMAND; see 'idfields --help'"),
]


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize(("argv", "problem"), BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], problem: str, json_flag: list[str]
) -> None:
    status, out, err = run(capsys, *argv, *(json_flag if argv else []))
    assert status == 2 and out == ""
    assert err.startswith("idfields: error: ") and err.endswith("\n") and err.count("\n") == 1
    assert problem in err


def test_help_documents_the_node_forms(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "new", "--help")
    flat = " ".join(out.split())
    assert status == 0
    assert "--node 7" in flat and "generator_id=92,launch_id=65" in flat
    assert "IDFIELDS_NODE_ID" in flat


# -- the real entry points ----------------------------------------------------------------------


def test_console_script_points_at_main() -> None:
    (script,) = entry_points(group="console_scripts", name="idfields")
    assert script.load() is main


def python_m(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in NODE_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "idfields", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_python_m_idfields_runs_and_fails_cleanly() -> None:
    done = python_m("inspect", "14150009200065", "--layout", "decimal", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fields"]["generator_id"] == 92
    failed = python_m("new", "--layout", "snowflake", "--node", "99999")
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
    assert "out of range 0..1023" in failed.stderr


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "idfields", "layouts"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # before the child writes: like `idfields layouts | true`
        errors = process.stderr.read()
        status = process.wait(timeout=60)
    assert (status, errors) == (1, b"")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://root@127.0.0.1/x", "is not a PostgreSQL URL"),
        ("postgresql://u:secret@127.0.0.1:1/x", "cannot read the node range of"),
    ],
)
def test_ranges_refuses_what_it_cannot_read_in_one_line(
    capsys: pytest.CaptureFixture[str], url: str, says: str
) -> None:
    assert main(["ranges", url]) == 2
    err = capsys.readouterr().err
    assert says in err and "secret" not in err and len(err.strip().splitlines()) == 1
