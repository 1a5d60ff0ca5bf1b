"""Base62 text form of 63-bit IDs, for URLs and call numbers.

The alphabet is ``0-9A-Za-z`` in ASCII order, so strings of equal width sort in the same
order as the numbers they encode: pad with :func:`encode_fixed` (11 characters hold any
63-bit ID) and a byte-wise sort of the strings is a numeric sort of the IDs. Database
collations that are not byte-wise (for example ``en_US`` in PostgreSQL) break that: use
``COLLATE "C"`` for such columns.

Base62 is used rather than base64 because ``-`` and ``_`` are easy to lose or misread in
URLs. Capacity per width, as in Chibrary's call numbers (Peter Harkins, "Distributed ID
Generation and Bit Packing"): 8 characters hold 47 bits, 9 characters 53 bits (every
JavaScript-safe integer), 11 characters 63 bits.

The encoding is case-sensitive: ``"a"`` and ``"A"`` are different digits, so never
case-fold these strings.
"""

from idfields.errors import Base62Error, InvalidCharacterError, WrongArgumentType

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
"""The 62 digits in ASCII order, which makes fixed-width strings sort numerically."""

MAX_VALUE = 2**63 - 1
"""Largest value the codec accepts: the largest signed 64-bit (``bigint``) value."""

FIXED_WIDTH = 11
"""Characters needed for any value up to :data:`MAX_VALUE` (62**10 < 2**63 <= 62**11)."""

_BASE = len(ALPHABET)
_DIGIT_VALUES = {char: index for index, char in enumerate(ALPHABET)}


def encode(value: int, *, width: int | None = None) -> str:
    """Return ``value`` (0..2**63-1) in base62, left-padded with ``"0"`` to ``width``.

    Without ``width`` the shortest form is returned (``"0"`` for zero). Raises
    :class:`Base62Error` if ``value`` is out of range or needs more than ``width`` characters.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongArgumentType(f"base62 encodes int values, not {type(value).__name__}")
    if value < 0:
        raise Base62Error(
            f"cannot base62-encode negative number {value}; values must be in 0..2**63-1"
        )
    if value > MAX_VALUE:
        raise Base62Error(
            f"cannot base62-encode {value}: it is over 2**63-1 ({MAX_VALUE}), the largest 63-bit ID"
        )
    digits: list[str] = []
    while True:
        value, remainder = divmod(value, _BASE)
        digits.append(ALPHABET[remainder])
        if not value:
            break
    text = "".join(reversed(digits))
    if width is None:
        return text
    if len(text) > width:
        raise Base62Error(
            f"value needs {len(text)} base62 characters but width={width}; pass a larger "
            f"width (width={FIXED_WIDTH} fits every 63-bit value)"
        )
    return text.rjust(width, ALPHABET[0])


def encode_fixed(value: int) -> str:
    """Return ``value`` as exactly :data:`FIXED_WIDTH` characters, so strings sort like IDs."""
    return encode(value, width=FIXED_WIDTH)


def decode(text: str) -> int:
    """Return the number encoded by base62 ``text`` (any width; leading ``"0"`` allowed).

    Raises :class:`InvalidCharacterError` naming the first bad character and its position,
    or :class:`Base62Error` for an empty string or a value over 2**63-1.
    """
    if not isinstance(text, str):
        raise WrongArgumentType(f"base62 decodes str, not {type(text).__name__}")
    if not text:
        raise Base62Error(
            "cannot base62-decode an empty string; expected 1 or more characters from 0-9A-Za-z"
        )
    value = 0
    for position, character in enumerate(text):
        digit = _DIGIT_VALUES.get(character)
        if digit is None:
            raise InvalidCharacterError(character, position)
        value = value * _BASE + digit
        # Checked per character so that a long hostile string fails fast.
        if value > MAX_VALUE:
            raise Base62Error(
                f"base62 string of {len(text)} characters decodes to more than 2**63-1 "
                f"({MAX_VALUE}), the largest 63-bit ID; it was not produced by this codec"
            )
    return value
