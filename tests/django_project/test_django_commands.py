"""``idfields_inspect`` takes an ID (or a public ID) apart; ``idfields_report`` lists each layout in
use; ``idfields_nodes`` lists who holds which node."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from idfields.django_app.conf import get_settings
from idfields.django_app.management.commands.idfields_launch import decimal_columns
from idfields.django_app.sources import coordination_database
from idfields.layouts import get_layout
from tests.django_project.testapp.models import Author


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_inspect_decodes_an_id_from_the_database() -> None:
    author = Author.objects.create(name="a")
    decoded = get_layout("snowflake").decode(author.pk)
    data = json.loads(run("idfields_inspect", str(author.pk), "--json"))
    assert data["id"] == str(author.pk) and data["layout"] == "snowflake"
    assert data["fields"] == decoded.values and data["time"] == decoded.time.isoformat()  # type: ignore[union-attr]
    lines = run("idfields_inspect", str(author.pk)).splitlines()
    values = [line.split()[1] for line in lines]
    assert values[1:4] == [str(v) for v in decoded.values.values()]
    columns = {
        line.index(value, len(line.split()[0])) for line, value in zip(lines, values, strict=True)
    }
    assert len(columns) == 1  # the values form one column, whatever the field names' widths


def test_inspect_takes_a_layout_and_rejects_bad_input() -> None:
    value = get_layout("decimal").compose(counter=12, generator_id=3, launch_id=7)
    data = json.loads(run("idfields_inspect", str(value), "--layout", "decimal", "--json"))
    assert data["fields"] == {"counter": 12, "generator_id": 3, "launch_id": 7}
    for bad in ("12ab", "1.5", "0x1f"):
        with pytest.raises(CommandError, match=r"is not an ID: give it in decimal digits"):
            run("idfields_inspect", bad)
    with pytest.raises(CommandError, match=r"exceeds 2\*\*63-1"):
        run("idfields_inspect", str(2**64))
    with pytest.raises(CommandError, match="unknown idfields layout"):
        run("idfields_inspect", "12", "--layout", "nope")


@pytest.mark.django_db
def test_report_lists_every_layout_in_use_with_its_room() -> None:
    Author.objects.create(name="a")  # this process now holds a snowflake lease
    text = run("idfields_report")
    sections = {line.split(":")[0] for line in text.splitlines() if not line.startswith(" ")}
    assert sections == {"snowflake", "traceid", "decimal", "snowflake_js"}
    snowflake = text.split("snowflake:")[1].split("\n\n")[0]
    assert "nodes: 1,024" in snowflake and "nodes free: 1,023" in snowflake
    assert "runs out: 2093-" in snowflake and "not JS-safe" in snowflake
    ttl = get_settings().lease_ttl
    assert f"restarts absorbed: {1023 / ttl:,.1f}/s from other hosts" in snowflake
    assert "launch " in text.split("decimal:")[1]  # launch ids left, from the launch log


@pytest.mark.django_db
def test_launch_says_what_it_recorded() -> None:
    text = run("idfields_launch", "--label", "v1.2.3").strip()
    launch = int(text.split()[1])
    assert text.startswith(f"launch {launch} recorded for 'v1.2.3'")
    assert f"IDFIELDS_LAUNCH_ID={launch}" in text


@pytest.mark.django_db
def test_launch_checks_every_decimal_id_column_for_ids_of_another_database() -> None:
    """The command hands record_launch() the DecimalId columns of the project's tables in the
    coordination database: rows there with an empty launch log are another database's
    (tests/pg/test_launch_floor.py has the refusal)."""
    alias = coordination_database().alias
    assert ("testapp_ledger", "id") in decimal_columns(alias)
    assert ("testapp_author", "id") not in decimal_columns(alias)


@pytest.mark.django_db
def test_inspect_takes_a_public_id() -> None:
    author = Author.objects.create(name="p")
    text = author.public_id
    by_public = json.loads(run("idfields_inspect", text, "--model", "testapp.Author", "--json"))
    assert by_public == json.loads(run("idfields_inspect", str(author.pk), "--json"))
    typo = text[:-1] + ("x" if text[-1] != "x" else "y")
    with pytest.raises(CommandError, match="check character"):
        run("idfields_inspect", typo, "--model", "testapp.Author")
    with pytest.raises(CommandError, match=r"name its model with --model, one of .*Author"):
        run("idfields_inspect", text)  # several models of the project show public IDs


@pytest.mark.django_db
def test_nodes_hide_released_leases_unless_all() -> None:
    Author.objects.create(name="n")  # this process holds a live snowflake lease
    db = coordination_database(None)  # the commands read committed rows on their own connection
    for node in range(5):
        db.execute(
            "INSERT INTO idfields_node_lease (layout, node, holder, acquired_at_ms, expires_at_ms)"
            " VALUES ('listing_test', %s, '', 1, 2)",
            [node],
        )
    try:
        default = run("idfields_nodes")
        everything = run("idfields_nodes", "--all")
    finally:
        db.execute("DELETE FROM idfields_node_lease WHERE layout = 'listing_test'")
    assert not any(line.endswith("released") for line in default.splitlines())
    hidden = re.search(r"^(\d+) released leases not shown \(--all lists them\)$", default, re.M)
    assert hidden is not None and int(hidden.group(1)) >= 5  # other tests may have released some
    assert " live" in default
    assert sum(line.endswith("released") for line in everything.splitlines()) >= 5


@pytest.mark.django_db
def test_ttl_ceiling_shows_sets_and_refuses_out_of_range() -> None:
    """The ceiling a claim's ttl may not pass, set through the command the refusal names."""
    assert run("idfields_ttl_ceiling").startswith("lease ttl ceiling: 60 s (this project's")
    assert run("idfields_ttl_ceiling", "20").strip() == (
        "lease ttl ceiling: 20 s (this project's LEASE_TTL: 30 s, above it: claims are refused "
        "until the ceiling is raised)"
    )
    with pytest.raises(CommandError, match=r"ttl_s=0\.001 is out of range; give 0\.003\.\.86400"):
        run("idfields_ttl_ceiling", "0.001")
    assert run("idfields_ttl_ceiling", "90").startswith("lease ttl ceiling: 90 s")
