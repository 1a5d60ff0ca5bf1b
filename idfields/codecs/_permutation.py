"""Keyed, reversible shuffling of IDs, for public IDs that do not reveal order or count.

k-sorted IDs leak information when shown to users: consecutive IDs tell how many rows were
made and when, and let anyone enumerate neighbours. :class:`KeyedPermutation` maps each ID
in ``1..2**bits-1`` to another number in the same range, one-to-one, and back again; store
the real ID and show only the permuted one (for example base62-encoded).

What this is and is not:

* It hides the order and the count of IDs from people who do not hold the key.
* It is NOT encryption and not a way to keep data secret. The public number is the ID in
  disguise; anything that depends on it staying unguessable (access control, tokens,
  secrets) needs real authorization or real cryptography, not this.
* Anyone who learns the key can invert every public ID, so keep the key out of source code
  (see :meth:`KeyedPermutation.from_env`), and make it random (:mod:`idfields.codecs._keys`
  refuses passphrases and short keys). A leaked key makes order and count public again;
  changing the key changes every public number (:class:`idfields.codecs.PublicIds` keeps
  strings of older keys resolving through a key list).
* The key-less "stable bit shuffle" of Chibrary's call numbers (Peter Harkins, "Distributed
  ID Generation and Bit Packing") is the weak special case of this: a fixed, public
  permutation that anyone can invert once they know (or work out) the shuffle.

How: a balanced Feistel network over the even width ``bits`` rounded up, with a keyed
BLAKE2b round function (one derived key per round), and cycle-walking to stay inside
``1..2**bits-1`` (zero is never produced nor accepted). Ten rounds, as in NIST FF1: narrow
halves need more rounds than the classic Luby-Rackoff four.
"""

from __future__ import annotations

import hashlib
import os
from typing import NoReturn

from idfields.codecs._keys import (
    KEY_HINT,
    parse_key,
    scrubbed,
)
from idfields.errors import (
    PermutationError,
    PermutationKeyError,
    ValueOutOfRange,
    WrongArgumentType,
)

MIN_BITS = 20
"""Narrowest supported ID space, about 10**6 values: the smallest domain FF3-1 accepts."""

MAX_BITS = 63
"""Widest supported ID space: positive signed 64-bit (``bigint``) values."""

DEFAULT_ENV_VAR = "IDFIELDS_PERMUTATION_KEY"
"""Environment variable read by :meth:`KeyedPermutation.from_env` by default."""

_ROUNDS = 10
_KEY_PERSON = b"idfields.perm"  # BLAKE2b personalisation: separates these keys from others.
_LABEL_PERSON = b"idfields.label"
__all__ = ["KeyedPermutation", "PermutationError", "PermutationKeyError"]


class KeyedPermutation:
    """A keyed bijection on ``1..2**bits-1``: ``decode(encode(i)) == i``.

    ``key`` is 32 or more random bytes, or their hex or base64 text (see
    :func:`idfields.codecs._keys.parse_key`). The same key, ``bits`` and ``label`` give the same
    permutation in every process; a different ``bits`` or ``label`` gives an unrelated one, so
    a label per table (``"shop.order"``) keeps one table's public IDs from telling anything
    about another's. ``bits=53`` keeps public IDs exact in JavaScript numbers.

    The raw key is not kept, nor left in the locals of a traceback. Instances do not change
    after construction, never show the key in ``repr``, ``str`` or errors, and refuse to be
    pickled (a pickle would carry the round keys); ``copy.copy`` and ``copy.deepcopy`` return
    the same instance.
    """

    __slots__ = ("_bits", "_half_bits", "_half_bytes", "_half_mask", "_max_value", "_rounds")

    def __init__(self, key: bytes | str, *, bits: int = 63, label: str = "") -> None:
        try:
            with scrubbed():
                master = _master_key(parse_key(key), _checked_bits(bits), label)
        finally:
            del key  # no traceback shows it: deeper frames are scrubbed, this one forgets it
        self._bits = bits
        self._max_value = (1 << bits) - 1
        self._half_bits = (bits + 1) // 2
        self._half_bytes = (self._half_bits + 7) // 8
        self._half_mask = (1 << self._half_bits) - 1
        # Keyed BLAKE2b spends a whole compression block on the key; keying once here and
        # copying the state per call makes each round about a third faster.
        self._rounds = tuple(
            hashlib.blake2b(
                key=hashlib.blake2b(round_number.to_bytes(8, "big"), key=master).digest(),
                digest_size=self._half_bytes,
            )
            for round_number in range(_ROUNDS)
        )

    @classmethod
    def from_env(cls, var: str = DEFAULT_ENV_VAR, *, bits: int = 63) -> KeyedPermutation:
        """Build from the key in environment variable ``var``, so it stays out of code."""
        text = os.environ.get(var)
        if not text:
            raise PermutationKeyError(f"environment variable {var} is not set or empty; {KEY_HINT}")
        try:
            return cls(parse_key(text, name=f"environment variable {var}"), bits=bits)
        finally:
            del text

    @property
    def bits(self) -> int:
        """Width of the ID space: IDs and public values are in ``1..2**bits-1``."""
        return self._bits

    @property
    def max_value(self) -> int:
        """Largest ID or public value, ``2**bits-1``."""
        return self._max_value

    def encode(self, id: int) -> int:
        """Return the public value for ``id`` (``1..2**bits-1``), in the same range."""
        value = self._check(id, "id")
        while True:
            value = self._feistel(value, self._rounds)
            if 0 < value <= self._max_value:
                return value

    def decode(self, public: int) -> int:
        """Return the ID whose public value is ``public``; the inverse of :meth:`encode`."""
        value = self._check(public, "public value")
        while True:
            value = self._feistel(value, self._rounds[::-1], inverse=True)
            if 0 < value <= self._max_value:
                return value

    def _check(self, value: int, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise WrongArgumentType(f"{name} must be an int, not {type(value).__name__}")
        if not 0 < value <= self._max_value:
            raise ValueOutOfRange(
                f"{name} {value} is out of range for {self!r}: expected 1..{self._max_value}"
            )
        return value

    def _feistel(
        self, value: int, rounds: tuple[hashlib.blake2b, ...], *, inverse: bool = False
    ) -> int:
        """One pass of the Feistel network over ``2 * half_bits`` bits (a permutation)."""
        half_bits, half_bytes, mask = self._half_bits, self._half_bytes, self._half_mask
        left, right = value >> half_bits, value & mask
        if inverse:
            left, right = right, left
        for keyed in rounds:
            state = keyed.copy()
            state.update(right.to_bytes(half_bytes, "big"))
            left, right = right, left ^ (int.from_bytes(state.digest(), "big") & mask)
        if inverse:
            left, right = right, left
        return (left << half_bits) | right

    def __repr__(self) -> str:
        # getattr: a repr must not raise, even of an instance whose __init__ failed half-way
        return f"KeyedPermutation(bits={getattr(self, '_bits', '?')}, key=<hidden>)"

    def __reduce__(self) -> NoReturn:
        raise WrongArgumentType(
            "KeyedPermutation cannot be pickled, because the pickle would carry its key; "
            "build it where it is needed, e.g. with KeyedPermutation.from_env()"
        )

    def __copy__(self) -> KeyedPermutation:
        return self  # Immutable, so a copy may share it.

    def __deepcopy__(self, memo: dict[int, object]) -> KeyedPermutation:
        return self


def _checked_bits(bits: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise WrongArgumentType(f"bits must be an int, not {type(bits).__name__}")
    if not MIN_BITS <= bits <= MAX_BITS:
        raise PermutationError(f"bits={bits} is not supported; use {MIN_BITS}..{MAX_BITS}")
    return bits


def _master_key(raw: bytes, bits: int, label: str) -> bytes:
    """One 64-byte key per (key, width, label): BLAKE2b keys are limited to 64 bytes, and
    permutations of different widths or labels must be unrelated."""
    if not isinstance(label, str):
        raise WrongArgumentType(f"label must be a str, not {type(label).__name__}")
    master = hashlib.blake2b(
        raw, digest_size=64, person=_KEY_PERSON, salt=bits.to_bytes(16, "big")
    ).digest()
    if label:
        master = hashlib.blake2b(
            label.encode(), key=master, digest_size=64, person=_LABEL_PERSON
        ).digest()
    return master
