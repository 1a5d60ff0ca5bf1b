"""A layout with four nodes: a Django and a SQLAlchemy process can only share it by leasing."""

from datetime import UTC, datetime

from idfields.layouts import Layout, Node, Sequence, Timestamp

TINY = Layout(
    "tiny",
    [Timestamp(41, unit="ms", epoch=datetime(2024, 1, 1, tzinfo=UTC)), Node(2), Sequence(20)],
)
