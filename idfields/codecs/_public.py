"""Public IDs: the string users see in URLs and JSON instead of the row's k-sorted ID.

``PublicIds(keys, label="shop.order")`` turns an ID into a 15-character string (63-bit IDs)::

    k  q7m3x0d9a2hzr  c
    |  |              +- check character (idfields.codecs._checked): catches every single typo
    |  +- the keyed permutation of the ID (KeyedPermutation), 13 base-31 digits, fixed width
    +- key id: which key of ``keys`` made it (derived from the key, so it never changes)

``keys`` is one key or a list, newest first: new strings use the first, strings of the others
keep resolving (rotation). Drop an old key once its strings may stop working. Decoding refuses,
naming the problem: a wrong length, a character outside the alphabet (uppercase included), a
failed check, a key id of no key held, and, given the ``layout``, an ID that cannot have been
made (a field out of range, a time in the future): what a tampered string or another site's key
gives.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence

from idfields.codecs import _checked
from idfields.codecs._keys import KEY_HINT, parse_key, scrubbed
from idfields.codecs._permutation import DEFAULT_ENV_VAR, KeyedPermutation
from idfields.errors import PermutationKeyError, PublicIdError, WrongArgumentType
from idfields.layouts import Layout

__all__ = ["PublicIds"]

_KEY_ID_PERSON = b"idfields.kid"
FUTURE_SLACK_NS = 5 * 10**9
"""How far ahead of this clock an ID's time may be (another host's clock may run ahead)."""


class PublicIds:
    """Encode IDs to public strings and back, for one table (``label``) and a set of keys."""

    __slots__ = ("_by_key_id", "_current", "_label", "_layout", "_width")

    def __init__(
        self,
        keys: bytes | str | Sequence[bytes | str],
        *,
        label: str,
        layout: Layout | None = None,
        bits: int = 63,
    ) -> None:
        try:
            with scrubbed():
                self._by_key_id, self._current = _permutations(keys, label, bits)
        finally:
            del keys  # no traceback shows them: deeper frames are scrubbed, this one forgets
        self._label = label
        self._layout = layout
        self._width = _checked.width_for(bits)

    @classmethod
    def from_env(
        cls,
        var: str = DEFAULT_ENV_VAR,
        *,
        label: str,
        layout: Layout | None = None,
        bits: int = 63,
    ) -> PublicIds:
        """Keys from environment variable ``var``: one, or several newest first, by commas."""
        return cls(keys_from_env(var), label=label, layout=layout, bits=bits)

    @property
    def length(self) -> int:
        """Characters in every public ID of this codec."""
        return self._width + 2

    @property
    def label(self) -> str:
        return self._label

    def encode(self, id: int) -> str:
        """The public string of ``id``, made with the newest key."""
        value = self._by_key_id[self._current].encode(id)
        return _checked.encode([self._current, *_checked.to_digits(value, self._width)])

    def decode(self, text: str) -> int:
        """The ID behind ``text``; :class:`PublicIdError` if it is not one this codec made."""
        digits = _checked.decode(text, self.length)
        permutation = self._by_key_id.get(digits[0])
        if permutation is None:
            raise PublicIdError(
                f"public ID {text!r} was made with a key this application does not hold "
                "(another site's, or an old key dropped from the key list)"
            )
        value = _checked.from_digits(digits[1:])
        if not 0 < value <= permutation.max_value:
            raise PublicIdError(f"public ID {text!r} is out of range: it was not made here")
        id = permutation.decode(value)
        self._check_possible(text, id)
        return id

    def _check_possible(self, text: str, id: int) -> None:
        if self._layout is None:
            return
        decoded = self._layout.decode(id)
        if not decoded.in_layout:
            raise PublicIdError(f"public ID {text!r} does not name a possible ID: tampered?")
        now = time.time_ns()
        wraps = self._layout.wraps
        if decoded.time_ns is not None and not wraps and decoded.time_ns > now + FUTURE_SLACK_NS:
            raise PublicIdError(
                f"public ID {text!r} names an ID from the future: tampered, or another key's"
            )

    def __repr__(self) -> str:
        # getattr: a repr must not raise, even of an instance whose __init__ failed half-way
        label, keys = getattr(self, "_label", "?"), len(getattr(self, "_by_key_id", ()))
        return f"PublicIds(label={label!r}, keys={keys}, key=<hidden>)"


def _permutations(
    keys: bytes | str | Sequence[bytes | str], label: str, bits: int
) -> tuple[dict[int, KeyedPermutation], int]:
    """One permutation per key, by key id, and the key id of the first (newest) key."""
    if not isinstance(label, str) or not label:
        raise WrongArgumentType("label must be a non-empty str naming the table, e.g. 'shop.order'")
    listed = [keys] if isinstance(keys, bytes | str) else list(keys)
    if not listed:
        raise PermutationKeyError("no permutation key given; give at least one")
    by_key_id: dict[int, KeyedPermutation] = {}
    for position, key in enumerate(listed, 1):
        raw = parse_key(key, name=f"permutation key {position} of {len(listed)}")
        key_id = key_id_of(raw)
        if key_id in by_key_id:
            raise PermutationKeyError(
                f"permutation keys {position} and an earlier one share key id "
                f"{_checked.ALPHABET[key_id]!r}, so their public IDs cannot be told apart; "
                "replace the newer key with another fresh one"
            )
        by_key_id[key_id] = KeyedPermutation(raw, bits=bits, label=label)
    return by_key_id, next(iter(by_key_id))  # the first key's: dicts keep insertion order


def key_id_of(raw: bytes) -> int:
    """The key id of a key's bytes: one base-31 digit, the same wherever the key is used."""
    digest = hashlib.blake2b(raw, digest_size=8, person=_KEY_ID_PERSON).digest()
    return int.from_bytes(digest, "big") % _checked.BASE


def keys_from_env(var: str = DEFAULT_ENV_VAR) -> list[bytes]:
    """The checked keys of environment variable ``var`` (comma-separated, newest first)."""
    texts = [text for text in os.environ.get(var, "").split(",") if text.strip()]
    if not texts:
        raise PermutationKeyError(f"environment variable {var} is not set or empty; {KEY_HINT}")
    try:
        with scrubbed():
            return [
                parse_key(text, name=f"key {n} of {len(texts)} in {var}")
                for n, text in enumerate(texts, 1)
            ]
    finally:
        del texts
