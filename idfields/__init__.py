"""idfields: 63-bit, k-sorted integer IDs, assigned before insert, the same in Python and Postgres.

The core knows nothing of Django or SQLAlchemy: layouts (data), generators (clock + node +
sequence), node sources, decode and codecs. The ORM layers sit on top in
``idfields.django_app`` and ``idfields.sqlalchemy_ext``.
"""

from idfields.errors import (
    ClockMovedBackwards,
    IdFieldsError,
    LayoutError,
    LayoutExhausted,
    NodeError,
    NodeNotConfigured,
    ValueOutOfRange,
)
from idfields.generators import (
    CounterGenerator,
    IdGenerator,
    IdSource,
    TimeGenerator,
    make_generator,
)
from idfields.layouts import (
    BUILTIN_LAYOUTS,
    MAX_ID,
    MAX_JS_SAFE_ID,
    Constant,
    Decoded,
    Layout,
    Node,
    Sequence,
    Timestamp,
    get_layout,
)
from idfields.nodes import (
    Assignment,
    DevelopmentNode,
    EnvironmentNode,
    NodeSource,
    StaticNode,
    default_source,
)

__version__ = "0.1.0"

__all__ = [
    "BUILTIN_LAYOUTS",
    "MAX_ID",
    "MAX_JS_SAFE_ID",
    "Assignment",
    "ClockMovedBackwards",
    "Constant",
    "CounterGenerator",
    "Decoded",
    "DevelopmentNode",
    "EnvironmentNode",
    "IdFieldsError",
    "IdGenerator",
    "IdSource",
    "Layout",
    "LayoutError",
    "LayoutExhausted",
    "Node",
    "NodeError",
    "NodeNotConfigured",
    "NodeSource",
    "Sequence",
    "StaticNode",
    "TimeGenerator",
    "Timestamp",
    "ValueOutOfRange",
    "__version__",
    "default_source",
    "get_layout",
    "make_generator",
]
