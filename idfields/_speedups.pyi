from collections.abc import Callable

class CounterCore:
    """Compiled hot path of CounterGenerator (see idfields/_speedups.c)."""

    _left: int
    _id: int
    _step: int
    _busy: int
    def __call__(self) -> int: ...

class TimeCore(CounterCore):
    """Compiled hot path of TimeGenerator (see idfields/_speedups.c)."""

    _tick: int
    _epoch_ns: int
    _unit_ns: int
    _skew_ticks: int
    _limit_tick: int
    _node_base: int
    _modulus: int
    _tick_mul: int
    _per_block: int
    _clock: Callable[[], int]

class SlotDefault:
    """SlotDefault(slot, closed): the compiled per-row ID default (see idfields/_speedups.c)."""

    slot: object
    def __init__(self, slot: object, closed: type[BaseException]) -> None: ...
    def __call__(self, context: object = None, /) -> int: ...
