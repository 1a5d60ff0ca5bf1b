"""``python -m idfields.sqlalchemy_ext nodes URL [--layout NAME] [--ttl S] [--schema S]``: the
lease table as ``manage.py idfields_nodes`` shows it, for projects without Django."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError

from idfields.coordination import list_leases
from idfields.coordination._report import holder_table, room_line
from idfields.errors import IdFieldsError
from idfields.layouts import get_layout
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase, sync_url


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m idfields.sqlalchemy_ext")
    commands = parser.add_subparsers(dest="command", required=True)
    nodes = commands.add_parser("nodes", help="who holds which node, and each layout's room")
    nodes.add_argument(
        "url", help="SQLAlchemy URL of the database holding the idfields tables (async too)"
    )
    nodes.add_argument("--layout", action="append", help="a built-in or registered layout name")
    nodes.add_argument("--all", action="store_true", help="list released leases too")
    nodes.add_argument("--ttl", type=float, default=60.0, help="the fleet's lease ttl (seconds)")
    nodes.add_argument("--schema", help="the schema holding the idfields tables (MetaData's)")
    args = parser.parse_args(argv)
    try:
        layouts = [get_layout(name) for name in args.layout or ["snowflake"]]
        db = SQLAlchemyDatabase(create_engine(sync_url(args.url)), schema=args.schema)
        leases = list_leases(db, layouts[0].lease_key if args.layout else None)
        print(holder_table(leases, released=args.all), end="\n\n")
        for layout in layouts:
            print(room_line(db, layout, args.ttl))
    except (IdFieldsError, KeyError, ValueError, SQLAlchemyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
