"""The ``idfields`` command (also ``python -m idfields``): layouts, new IDs, inspect, codecs.

Exit status: 0 on success; 2 when the input or the setup is wrong (one line on stderr naming the
problem and the fix, never a traceback, with or without ``--json``). ``--json`` prints one JSON
document on stdout; without it the output is aligned for people and ``new`` prints one ID a line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from idfields import __version__
from idfields.cli import _codec, _ids, _keys, _layouts, _ranges
from idfields.cli._arguments import MAX_COUNT
from idfields.codecs import DEFAULT_ENV_VAR
from idfields.compare._cli import add_compare_command
from idfields.errors import IdFieldsError, UsageError
from idfields.generators._hotpath import core_status
from idfields.layouts import BUILTIN_LAYOUTS

__all__ = ["main"]

Run = Callable[[argparse.Namespace], dict[str, Any]]
Render = Callable[[dict[str, Any]], str]

NODE_HELP = (
    "node of the generator: N for a layout with one node field (e.g. --node 7), or "
    "name=value pairs for several (e.g. --layout decimal --node generator_id=92,launch_id=65). "
    "Without it the node comes from the environment (IDFIELDS_NODE_ID, or the layout's variables "
    "such as IDFIELDS_GENERATOR_ID/IDFIELDS_LAUNCH_ID), or IDFIELDS_DEVELOPMENT=1"
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (not usage text) through ``main``."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}; see '{self.prog} --help'")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="idfields",
        description="63-bit k-sorted IDs: list layouts, issue IDs, inspect one, encode/decode.",
        epilog="Exit status 2: bad input or setup, explained in one line on stderr.",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # --version: one unwrapped line
    )
    parser.add_argument(
        "--version", action="version", version=f"idfields {__version__} ({core_status()})"
    )
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, run: Run, render: Render, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(run=run, render=render)
        return sub

    def layout_option(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--layout", default="snowflake", help=f"one of {', '.join(BUILTIN_LAYOUTS)}"
        )

    command(
        "layouts",
        _layouts.run,
        _layouts.render,
        "built-in layouts: fields, IDs per second per node, nodes, when they run out or wrap",
    )
    new = command("new", _ids.run_new, _ids.render_new, "issue new IDs")
    layout_option(new)
    new.add_argument("--node", help=NODE_HELP)
    new.add_argument("--count", default="1", help=f"how many IDs, 1..{MAX_COUNT:,} (default 1)")
    new.add_argument("--base62", action="store_true", help="show the base62 form too")
    inspect = command(
        "inspect", _ids.run_inspect, _ids.render_inspect, "decode an ID into fields and UTC time"
    )
    inspect.add_argument("id", metavar="ID", help="the ID, in decimal (or base62 with --base62)")
    layout_option(inspect)
    inspect.add_argument("--base62", action="store_true", help="ID is given in base62")
    add_compare_command(commands, parents=[common])
    node_ranges = command(
        "ranges",
        _ranges.run,
        _ranges.render,
        "the node range each PostgreSQL database records; exit 2 when two share nodes",
    )
    node_ranges.add_argument("urls", metavar="URL", nargs="+", help="postgresql://... URLs")
    encode = command(
        "encode", _codec.run_encode, _codec.render_encode, "ID -> base62 text or public ID"
    )
    encode.add_argument("id", metavar="ID", help="the ID, in decimal")
    key = command(
        "key",
        _keys.run,
        _keys.render,
        f"new: print a fresh key; check: vet {DEFAULT_ENV_VAR}; derive: a key from a "
        "passphrase on stdin (scrypt)",
    )
    key.add_argument("action", choices=("new", "check", "derive"))
    key.add_argument("--salt", help="derive: names the deployment, e.g. shop-prod")
    decode = command(
        "decode", _codec.run_decode, _codec.render_decode, "base62 text or public ID -> ID"
    )
    decode.add_argument("text", metavar="TEXT", help="base62 text, or a public ID")
    for sub in (encode, decode):
        sub.add_argument("--codec", choices=("base62", "permute", "public"), default="base62")
        sub.add_argument(
            "--label",
            help="public: the table's label, as the application uses it (Django: app.model)",
        )
        sub.add_argument(
            "--bits",
            type=int,
            choices=(53, 63),
            help=f"permute: ID space width (53 keeps public IDs exact in JavaScript; default "
            f"63). The key is read from {DEFAULT_ENV_VAR} only, never from arguments",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        document = args.run(args)
        output = json.dumps(document) if args.json else args.render(document)
    except IdFieldsError as error:
        print(f"idfields: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
    try:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader stopped early (`idfields new --count 1000 | head`): not our error, and
        # Python's flush at exit must not print a traceback either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
