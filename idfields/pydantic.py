"""Pydantic types for IDs: an integer in Python, a string in JSON and in the OpenAPI schema.

A 63-bit ID is above 2**53, the largest integer a JavaScript number (an IEEE double) holds
exactly: ``JSON.parse`` in a browser or Node turns ``384561619019321341`` into
``384561619019321340``, and the client then posts back, or pages after, an ID that does not
exist. So :data:`Id` is sent as a string of digits and documented as one; on input it also takes
an integer (servers and tests send those), and never a float (its precision is already gone)::

    class Post(BaseModel):
        id: Id
        parent_id: Id | None = None

:class:`PublicIdText` does the same for public IDs (a :class:`~idfields.codecs.PublicIds`: the
codec's string in JSON, the real ID in Python), and :class:`IdText` for any other text form. Each
goes in ``Annotated``, so a type checker reads the field as the ``int`` it is::

    PostId = Annotated[int, PublicIdText(codec)]

    class PostOut(BaseModel):
        id: PostId
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from idfields.codecs import _checked
from idfields.codecs._public import PublicIds
from idfields.errors import InvalidArgument, ValueOutOfRange

__all__ = ["ID_PATTERN", "Id", "IdText", "PublicIdText"]

MAX_ID = 2**63 - 1
ID_PATTERN = r"^[0-9]{1,19}$"


class IdText:
    """``Annotated[int, IdText(...)]``: an ID whose JSON form is ``to_text(id)``, read back by
    ``from_text`` from any string matching ``pattern`` (a ``ValueError`` from it is a validation
    error); ``pattern`` describes the string in JSON Schema."""

    def __init__(
        self,
        *,
        to_text: Callable[[int], str] = str,
        from_text: Callable[[str], int] = int,
        pattern: str = ID_PATTERN,
    ) -> None:
        self._to_text = to_text
        self._from_text = from_text
        self._pattern = pattern
        self._matches = re.compile(pattern).match

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            self._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                self._to_text, when_used="json"
            ),
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "pattern": self._pattern}

    def _validate(self, value: object) -> int:
        if isinstance(value, str) and self._matches(value):
            number = self._from_text(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            raise InvalidArgument(
                f"an ID is a string matching {self._pattern} or a whole number, not "
                f"{value!r} (a JSON number above 2**53 has lost digits: send IDs as strings)"
            )
        if not 0 <= number <= MAX_ID:
            raise ValueOutOfRange(f"ID {number} is out of range; IDs are 0..{MAX_ID}")
        return number


class PublicIdText(IdText):
    """``Annotated[int, PublicIdText(codec)]``: IDs sent as ``codec``'s public strings (a wrong
    or foreign one is a validation error naming the problem), kept as the real IDs in Python."""

    def __init__(self, codec: PublicIds) -> None:
        pattern = f"^[{_checked.ALPHABET}]{{{codec.length}}}$"
        super().__init__(to_text=codec.encode, from_text=codec.decode, pattern=pattern)


Id = Annotated[int, IdText()]
"""An ID: ``int`` in Python, a string of digits in JSON and in the schema."""
