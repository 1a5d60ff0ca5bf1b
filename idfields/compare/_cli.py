"""The ``compare`` subcommand, for ``idfields compare`` and ``manage.py idfields_compare``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from idfields.errors import IdFieldsError

if TYPE_CHECKING:
    from idfields.compare._report import Report

HELP = "insert N rows keyed by AUTO_INCREMENT, k-sorted IDs and UUIDs; compare speed and size"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        help="postgresql://..., mysql://... or sqlite:///file.db (default: a temporary SQLite "
        "database)",
    )
    parser.add_argument(
        "--rows", type=_whole_number("--rows", 10), default=10_000, help="rows per table (10,000)"
    )
    parser.add_argument(
        "--repeat",
        type=_whole_number("--repeat", 1),
        default=3,
        help="runs of each strategy, interleaved; the table shows median and spread (3)",
    )
    parser.add_argument("--out", help="directory for compare.json and compare.png")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_compare_command(subparsers: Any, **parser_options: Any) -> argparse.ArgumentParser:
    """Register ``compare`` on argparse subparsers.

    Defaults set: ``run(args) -> dict`` and ``render(dict) -> str`` (the ``idfields`` CLI's
    convention), and ``handler`` (:func:`run_cli`) for a parser that just calls it.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "compare", help=HELP, description=HELP, **parser_options
    )
    add_arguments(parser)
    parser.set_defaults(run=run_document, render=render_document, handler=run_cli)
    return parser


def run_document(args: argparse.Namespace) -> dict[str, Any]:
    """Run the comparison for parsed arguments; bad input raises IdFieldsError (exit 2)."""
    try:
        report = _compare(args)
    except ValueError as error:
        raise IdFieldsError(str(error)) from None
    document = report.to_dict()
    if args.out:
        document["outputs"] = [f"{args.out}/compare.json", f"{args.out}/compare.png"]
    return document


def render_document(document: dict[str, Any]) -> str:
    from idfields.compare._report import text_table

    written = document.get("outputs")
    return text_table(document) + (f"\nwrote {' and '.join(written)}" if written else "")


def run_cli(args: argparse.Namespace) -> int:
    """Run, print the table (rich when installed), return the exit status."""
    try:
        report = _compare(args)
    except ValueError as error:
        print(f"idfields compare: {error}", file=sys.stderr)
        return 2
    report.print()
    if args.out:
        print(f"wrote {args.out}/compare.json and {args.out}/compare.png")
    return 0


def _compare(args: argparse.Namespace) -> Report:
    """The comparison the parsed arguments ask for (the runner is imported only when one runs)."""
    from idfields.compare._runner import run_comparison

    return run_comparison(
        args.database_url,
        args.rows,
        args.out,
        progress=not args.no_progress,
        repeat=args.repeat,
    )


def _whole_number(option: str, minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for ``option``: a whole number of at least ``minimum``, else an
    error that names the option and what it got."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{option} takes a whole number, got {text!r}"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{option} must be at least {minimum}, got {value}")
        return value

    return parse
