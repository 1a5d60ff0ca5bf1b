"""Text and public-facing forms of IDs: base62 strings and keyed permutations.

Only the standard library is used, so these work without Django or SQLAlchemy.
"""

from idfields.codecs.base62 import (
    ALPHABET,
    FIXED_WIDTH,
    MAX_VALUE,
    Base62Error,
    InvalidCharacterError,
    decode,
    encode,
    encode_fixed,
)
from idfields.codecs.permutation import (
    DEFAULT_ENV_VAR,
    MAX_BITS,
    MIN_BITS,
    MIN_KEY_BYTES,
    KeyedPermutation,
    PermutationError,
    PermutationKeyError,
)

__all__ = [
    "ALPHABET",
    "DEFAULT_ENV_VAR",
    "FIXED_WIDTH",
    "MAX_BITS",
    "MAX_VALUE",
    "MIN_BITS",
    "MIN_KEY_BYTES",
    "Base62Error",
    "InvalidCharacterError",
    "KeyedPermutation",
    "PermutationError",
    "PermutationKeyError",
    "decode",
    "encode",
    "encode_fixed",
]
