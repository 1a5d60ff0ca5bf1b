"""Public IDs for SQLAlchemy models: ``order.public_id`` and ``Order.public_id == text``.

::

    class Order(Base):
        __tablename__ = "orders"
        id: Mapped[int] = id_column(primary_key=True)
        public_id = public_id_property(label="shop.order")

    order.public_id                                          # "k3q7m3x0d9a2hzr"
    session.scalars(select(Order).where(Order.public_id == text)).one_or_none()
    public_ids(Order).decode(text)                           # the pk, or PublicIdError why not

The keys come from ``IDFIELDS_PERMUTATION_KEY`` (several, newest first, by commas) at first use,
or from ``keys=``. A string that does not decode compares unequal to every row (``false()``), so
a lookup by a typo'd, tampered or other key's string finds nothing, as Django's ``pk__public``
does; the same key and label give the same strings in both.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.hybrid import Comparator, hybrid_property
from sqlalchemy.sql.elements import ColumnElement

from idfields.codecs import DEFAULT_ENV_VAR, PublicIdError, PublicIds
from idfields.errors import WrongArgumentType
from idfields.sqlalchemy_ext._registry import resolve_layout
from idfields.sqlalchemy_ext._tables import INFO_KEY

__all__ = ["public_id_property", "public_ids"]

Keys = str | bytes | Sequence[str | bytes]
_CODECS: weakref.WeakKeyDictionary[Any, _LazyCodec] = weakref.WeakKeyDictionary()  # by getter


class _LazyCodec:
    """The model's :class:`PublicIds`, built at first use: keys and layouts are read then."""

    def __init__(self, label: str, column: str, keys: Keys | None) -> None:
        self.label, self.column, self._keys = label, column, keys
        self._codec: PublicIds | None = None
        self._lock = threading.Lock()

    def get(self, model: type) -> PublicIds:
        if self._codec is None:
            with self._lock:
                if self._codec is None:
                    self._codec = self._build(model)
        return self._codec

    def _build(self, model: type) -> PublicIds:
        name: str | None = sa.inspect(model, raiseerr=True).columns[self.column].info.get(INFO_KEY)
        layout = resolve_layout(name) if name else None
        if self._keys is None:
            return PublicIds.from_env(DEFAULT_ENV_VAR, label=self.label, layout=layout)
        codec = PublicIds(self._keys, label=self.label, layout=layout)
        self._keys = None  # the round keys are all that is needed from now on
        return codec


class _PublicIdComparator(Comparator[str | None]):
    def __init__(self, model: type, codec: _LazyCodec) -> None:
        super().__init__(getattr(model, codec.column))
        self.model, self.codec = model, codec

    def __eq__(self, other: Any) -> ColumnElement[bool]:  # type: ignore[override]
        try:
            pk = self.codec.get(self.model).decode(other)
        except PublicIdError:
            return sa.false()
        return self.expression == pk  # type: ignore[return-value]

    def __ne__(self, other: Any) -> ColumnElement[bool]:  # type: ignore[override]
        return sa.not_(self.__eq__(other))


def public_id_property(
    *, label: str, column: str = "id", keys: Keys | None = None
) -> hybrid_property[str | None]:
    """A hybrid property: the row's public ID string, comparable to a string in queries.

    ``label`` names the table in the key (keep it when renaming the class, or every string
    changes); ``column`` is the primary key attribute.
    """
    codec = _LazyCodec(label, column, keys)
    del keys

    def public_id(self: Any) -> str | None:
        value = getattr(self, column)
        return None if value is None else codec.get(type(self)).encode(int(value))

    _CODECS[public_id] = codec
    prop = hybrid_property(public_id)
    return prop.comparator(lambda cls: _PublicIdComparator(cls, codec))


def public_ids(model: type) -> PublicIds:
    """The :class:`PublicIds` of ``model`` (its ``public_id_property``)."""
    descriptor: Any
    for descriptor in sa.inspect(model, raiseerr=True).all_orm_descriptors:
        if isinstance(descriptor, hybrid_property) and descriptor.fget in _CODECS:
            return _CODECS[descriptor.fget].get(model)
    raise WrongArgumentType(f"{model.__name__} has no public_id_property(); add one to the model")
