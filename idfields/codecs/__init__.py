"""Text and public-facing forms of IDs: base62 strings, keyed permutations, public ID strings.

Only the standard library is used, so these work without Django or SQLAlchemy.
"""

from idfields.codecs._base62 import (
    ALPHABET,
    FIXED_WIDTH,
    MAX_VALUE,
    decode,
    encode,
    encode_fixed,
)
from idfields.codecs._keys import (
    MIN_KEY_BYTES,
    derive_key,
    generate_key,
    parse_key,
)
from idfields.codecs._permutation import DEFAULT_ENV_VAR, MAX_BITS, MIN_BITS, KeyedPermutation
from idfields.codecs._public import PublicIds
from idfields.errors import (
    Base62Error,
    InvalidCharacterError,
    PermutationError,
    PermutationKeyError,
    PublicIdError,
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
    "PublicIdError",
    "PublicIds",
    "decode",
    "derive_key",
    "encode",
    "encode_fixed",
    "generate_key",
    "parse_key",
]
