"""The ``compare`` subcommand, for ``idfields compare`` and ``manage.py idfields_compare``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from idfields.errors import IdFieldsError

HELP = "insert N rows keyed by AUTO_INCREMENT, k-sorted IDs and UUIDs; compare speed and size"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        help="postgresql://..., mysql://... or sqlite:///file.db (default: a temporary SQLite "
        "database)",
    )
    parser.add_argument("--rows", type=_rows, default=10_000, help="rows per table (10,000)")
    parser.add_argument(
        "--repeat",
        type=_repeat,
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
    from idfields.compare.runner import run_comparison

    try:
        report = run_comparison(
            args.database_url,
            args.rows,
            args.out,
            progress=not args.no_progress,
            repeat=args.repeat,
        )
    except ValueError as error:
        raise IdFieldsError(str(error)) from None
    document = report.to_dict()
    if args.out:
        document["outputs"] = [f"{args.out}/compare.json", f"{args.out}/compare.png"]
    return document


def render_document(document: dict[str, Any]) -> str:
    from idfields.compare.report import text_table

    written = document.get("outputs")
    return text_table(document) + (f"\nwrote {' and '.join(written)}" if written else "")


def run_cli(args: argparse.Namespace) -> int:
    """Run, print the table (rich when installed), return the exit status."""
    from idfields.compare.runner import run_comparison

    try:
        report = run_comparison(
            args.database_url,
            args.rows,
            args.out,
            progress=not args.no_progress,
            repeat=args.repeat,
        )
    except ValueError as error:
        print(f"idfields compare: {error}", file=sys.stderr)
        return 2
    report.print()
    if args.out:
        print(f"wrote {args.out}/compare.json and {args.out}/compare.png")
    return 0


def _rows(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--rows takes a whole number, got {text!r}") from None
    if value < 10:
        raise argparse.ArgumentTypeError(f"--rows must be at least 10, got {value}")
    return value


def _repeat(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--repeat takes a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--repeat must be at least 1, got {value}")
    return value
