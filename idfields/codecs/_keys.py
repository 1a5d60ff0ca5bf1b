"""Permutation keys: random bytes, written as hex or base64, or derived slowly from a passphrase.

A key that a person chose can be found offline: one public ID next to its row's creation time is
enough to test guesses, and the permutation runs ~50,000 guesses a second in pure Python. So a
key is refused unless it looks like what ``secrets.token_bytes(32)`` gives:

- ``bytes`` of at least :data:`MIN_KEY_BYTES`, not all printable ASCII (that is text, a
  passphrase given as bytes) and with at least :data:`MIN_DISTINCT_BYTES` different byte values;
- or a ``str`` in hex (``secrets.token_hex(32)``) or base64 (standard or URL-safe,
  ``secrets.token_urlsafe(32)``) of such bytes, and not letters of one case only (words).

A passphrase is accepted only through :func:`derive_key`, scrypt with a salt, which makes each
guess cost 128 MiB and a good part of a second instead of 20 microseconds. No error message,
``repr`` or traceback local holds a key: messages name the problem (length, form), never the value,
and :func:`scrubbed` clears the frames an error leaves.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import secrets
import string
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from idfields.errors import PermutationKeyError

MIN_KEY_BYTES = 32
"""Shortest key accepted: 256 random bits."""

MIN_DISTINCT_BYTES = 16
"""Fewest different byte values in a key; 32 random bytes have ~30, a repeated pattern few."""

SCRYPT_N = 2**17
"""scrypt cost of :func:`derive_key` (128 MiB with r=8): each passphrase guess costs as much."""

MIN_SCRYPT_N = 2**14
"""Cheapest cost :func:`derive_key` accepts (tests use it; production keeps the default)."""

_HEX = re.compile(r"[0-9a-fA-F]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/\-_]+={0,2}")
_PRINTABLE = frozenset(string.printable.encode())
_ONE_CASE = re.compile(r"[a-z]+|[A-Z]+")
KEY_HINT = (
    f"use {MIN_KEY_BYTES} random bytes written as hex or base64, e.g. the output of "
    '`idfields key new` (or python -c "import secrets; print(secrets.token_hex(32))"); '
    "a passphrase only through idfields.codecs.derive_key()"
)


def generate_key() -> str:
    """A new random key, as 64 hex digits."""
    return secrets.token_hex(MIN_KEY_BYTES)


@contextmanager
def scrubbed() -> Iterator[None]:
    """Clear the locals of the frames an exception leaves, so no traceback (Django's debug page,
    an error reporter) shows a key. The frame using this must ``del`` its own key names."""
    try:
        yield
    except BaseException as error:
        traceback.clear_frames(error.__traceback__)
        raise


def parse_key(key: object, *, name: str = "permutation key") -> bytes:
    """The key's bytes, checked (see the module docstring); raises :class:`PermutationKeyError`.

    ``name`` says where the key came from in error messages (a setting, a variable).
    """
    try:
        with scrubbed():
            return _parse(key, name)
    finally:
        del key


def derive_key(passphrase: str | bytes, salt: str | bytes, *, n: int = SCRYPT_N) -> bytes:
    """A key derived from a passphrase with scrypt (``n``, r=8, p=1): slow on purpose.

    ``salt`` should be unique to the deployment (say, the project's name and environment), so
    one table of guesses does not serve every site that picked the same passphrase.
    """
    try:
        with scrubbed():
            return _scrypt(passphrase, salt, n)
    finally:
        del passphrase


def _parse(key: object, name: str) -> bytes:
    if isinstance(key, str):
        raw = _decode_text(key, name)
        words = _ONE_CASE.fullmatch(key.strip().rstrip("=")) is not None
    elif isinstance(key, bytes):
        raw, words = key, False
    else:
        raise PermutationKeyError(
            f"{name} must be bytes or str, not {type(key).__name__}; {KEY_HINT}"
        )
    problem = _weakness(raw) or ("is letters of one case only, like words" if words else None)
    if problem is not None:
        raise PermutationKeyError(f"{name} {problem}; {KEY_HINT}")
    return raw


def _scrypt(passphrase: str | bytes, salt: str | bytes, n: int) -> bytes:
    if not salt:
        raise PermutationKeyError("derive_key needs a salt: name the deployment, e.g. 'shop-prod'")
    if n < MIN_SCRYPT_N or n & (n - 1):
        raise PermutationKeyError(f"scrypt n={n} is too cheap; use a power of two >= 2**14")
    secret = passphrase.encode() if isinstance(passphrase, str) else passphrase
    salt = salt.encode() if isinstance(salt, str) else salt
    return hashlib.scrypt(secret, salt=salt, n=n, r=8, p=1, maxmem=256 * n * 8, dklen=MIN_KEY_BYTES)


def _decode_text(key: str, name: str) -> bytes:
    """Hex first (its digits are also base64 digits), then base64; the length of what failed."""
    text = key.strip()
    if _HEX.fullmatch(text) and len(text) % 2 == 0:
        return bytes.fromhex(text)
    if _BASE64.fullmatch(text):
        digits = text.rstrip("=").replace("-", "+").replace("_", "/")
        try:
            return base64.b64decode(digits + "=" * (-len(digits) % 4), validate=True)
        except (binascii.Error, ValueError):
            pass
    raise PermutationKeyError(
        f"{name} ({len(text)} characters) is neither hex nor base64; {KEY_HINT}"
    )


def _weakness(raw: bytes) -> str | None:
    if len(raw) < MIN_KEY_BYTES:
        return f"is {len(raw)} bytes, shorter than {MIN_KEY_BYTES}"
    if all(byte in _PRINTABLE for byte in raw):
        return "is printable text (a passphrase?), not random bytes"
    if len(set(raw)) < MIN_DISTINCT_BYTES:
        return f"has only {len(set(raw))} different byte values, so it is not random"
    return None
