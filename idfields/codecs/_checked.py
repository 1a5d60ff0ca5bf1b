"""Fixed-width base-31 text with a check character: one string per value, typos refused.

The 31 digits are ``0-9`` and the lowercase letters without ``i l o u v`` (read as 1, 1, 0, v,
u). Lowercase only: an uppercase letter is refused, not folded, so each value has exactly one
string (one URL, one cache key). The last character makes ``sum((i + 1) * digit[i]) % 31 == 0``
over the whole string; 31 is prime and every weight differs and is below 31, so changing any
one character, or swapping two neighbours that differ, always breaks the sum.
"""

from __future__ import annotations

from idfields.errors import InvalidArgument, PublicIdError

ALPHABET = "0123456789abcdefghjkmnpqrstwxyz"
"""The digits, in value order."""

BASE = len(ALPHABET)  # 31, prime: what makes the check catch every single typo
MAX_LENGTH = BASE - 1  # weights 1..30 must stay distinct and nonzero modulo 31
_VALUES = {character: value for value, character in enumerate(ALPHABET)}
_SHOWN = 40  # characters of a bad input quoted back in an error


def width_for(bits: int) -> int:
    """Digits needed for every value below ``2**bits``."""
    width = 1
    while BASE**width < 2**bits:
        width += 1
    return width


def encode(digits: list[int]) -> str:
    """``digits`` (each 0..30) with their check character appended."""
    if not 0 < len(digits) < MAX_LENGTH:
        raise InvalidArgument(
            f"{len(digits)} digits do not fit a checked string of <= {MAX_LENGTH}"
        )
    total = sum((index + 1) * digit for index, digit in enumerate(digits))
    check = (-total * pow(len(digits) + 1, -1, BASE)) % BASE
    return "".join(ALPHABET[digit] for digit in [*digits, check])


def decode(text: str, length: int, *, what: str = "public ID") -> list[int]:
    """The digits of ``text`` without the check, or :class:`PublicIdError` naming the problem."""
    if not isinstance(text, str):
        raise PublicIdError(f"a {what} is a str, not {type(text).__name__}")
    shown = repr(text[:_SHOWN]) + ("..." if len(text) > _SHOWN else "")
    if len(text) != length:
        raise PublicIdError(
            f"{what} {shown} is {len(text)} characters long; a {what} is exactly {length}"
        )
    digits = []
    for position, character in enumerate(text):
        value = _VALUES.get(character)
        if value is None:
            raise PublicIdError(
                f"{what} {shown} has {character!r} at position {position}; {_fix(character)}"
            )
        digits.append(value)
    if sum((index + 1) * digit for index, digit in enumerate(digits)) % BASE:
        raise PublicIdError(
            f"{what} {shown} fails its check character: a character is mistyped or two are "
            "swapped; copy it again from its source"
        )
    return digits[:-1]


def to_digits(value: int, width: int) -> list[int]:
    """``value`` as ``width`` base-31 digits, most significant first (zero-padded)."""
    digits = []
    for _ in range(width):
        value, digit = divmod(value, BASE)
        digits.append(digit)
    if value:
        raise InvalidArgument(f"value does not fit {width} base-31 digits")
    return digits[::-1]


def from_digits(digits: list[int]) -> int:
    value = 0
    for digit in digits:
        value = value * BASE + digit
    return value


def _fix(character: str) -> str:
    if character.lower() in _VALUES:
        return "public IDs are lowercase: type it as written, without changing its case"
    if character.lower() in "ilouv":
        return f"{character!r} is never used (it reads like another character); check the copy"
    return f"only {ALPHABET} appear in public IDs"
