"""Layouts as data: fields, the Layout that packs them, and the built-ins (with references)."""

from idfields.layouts._builtin import (
    BUILTIN_LAYOUTS,
    CHRONICLE,
    DECIMAL,
    GLOBALID,
    RUNID,
    SNOWFLAKE,
    SNOWFLAKE_EPOCH,
    SNOWFLAKE_JS,
    TRACEID,
    get_layout,
)
from idfields.layouts._fields import UNITS, Constant, FieldSpec, Node, Sequence, Timestamp
from idfields.layouts._geometry import TickGeometry
from idfields.layouts._layout import (
    MAX_ID,
    MAX_JS_SAFE_ID,
    Decoded,
    Layout,
    PlacedField,
    check_id,
)

__all__ = [
    "BUILTIN_LAYOUTS",
    "CHRONICLE",
    "DECIMAL",
    "GLOBALID",
    "MAX_ID",
    "MAX_JS_SAFE_ID",
    "RUNID",
    "SNOWFLAKE",
    "SNOWFLAKE_EPOCH",
    "SNOWFLAKE_JS",
    "TRACEID",
    "UNITS",
    "Constant",
    "Decoded",
    "FieldSpec",
    "Layout",
    "Node",
    "PlacedField",
    "Sequence",
    "TickGeometry",
    "Timestamp",
    "check_id",
    "get_layout",
]
