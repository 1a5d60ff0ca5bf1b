"""User layouts that exercise the database renderer: past a narrow sequence's capacity, with
constants, wrapping, seconds, microseconds, sparse high bits."""

from __future__ import annotations

from datetime import UTC, datetime

from idfields.layouts import Constant, Layout, Node, Sequence, Timestamp

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
NARROW = Layout("narrow", [Timestamp(41, unit="ms", epoch=EPOCH), Node(10), Sequence(4)])
COARSE = Layout("coarse", [Timestamp(32, unit="s", epoch=EPOCH), Node(8), Sequence(23)])
TAGGED = Layout(  # constants above the timestamp, between it and the node, above the sequence
    "tagged",
    [
        Constant(2, value=2, name="version"),
        Timestamp(41, unit="ms", epoch=EPOCH),
        Constant(1, value=1, name="region"),
        Node(8, minimum=3, maximum=200),
        Constant(1, value=1, name="flag"),
        Sequence(5, minimum=1),
    ],
)
WRAPPING = Layout(  # a period of 2**30 ms, about 12 days
    "wrapping",
    [Constant(1, value=1), Timestamp(30, unit="ms", wraps=True), Node(8), Sequence(10)],
)
FINE = Layout("fine", [Timestamp(50, unit="us", epoch=EPOCH), Node(6), Sequence(7)])
SPARSE = Layout(  # high bits make ticks whose time in ms is past a bigint
    "sparse", [Timestamp(40, unit="10ms", epoch=EPOCH), Node(2), Sequence(2)]
)
LAYOUTS = (NARROW, COARSE, TAGGED, WRAPPING, FINE, SPARSE)
