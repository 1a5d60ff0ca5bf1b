"""Tests for idfields.codecs: base62 text form and keyed permutations of IDs."""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import pickle
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from idfields.codecs import (
    ALPHABET,
    FIXED_WIDTH,
    MAX_VALUE,
    Base62Error,
    InvalidCharacterError,
    KeyedPermutation,
    PermutationError,
    PermutationKeyError,
    decode,
    encode,
    encode_fixed,
)
from idfields.errors import ConfigurationError, IdFieldsError, ValueOutOfRange

values = st.integers(min_value=0, max_value=MAX_VALUE)
base62_text = st.text(alphabet=ALPHABET, min_size=0, max_size=10)
bad_characters = st.characters(codec="utf-8").filter(lambda c: c not in ALPHABET)
# Random-looking keys (what parse_key accepts), one per seed.
keys = st.binary(max_size=64).map(lambda seed: hashlib.blake2b(seed, digest_size=32).digest())
KEY = "5f0c3be4d1a27e9668a0f3c7b2d45e18c9a7f0e1d2b3c4a5968778695a4b3c2d"


def reference_value(text: str) -> int:
    """Positional value computed independently of the codec's decode loop."""
    return sum(ALPHABET.index(char) * 62**power for power, char in enumerate(reversed(text)))


# --- base62 -----------------------------------------------------------------------------


def test_alphabet_is_in_ascii_order() -> None:
    assert sorted(ALPHABET) == list(ALPHABET)
    assert len(set(ALPHABET)) == 62
    assert ALPHABET[:10] == "0123456789"


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (9, "9"), (10, "A"), (35, "Z"), (36, "a"), (61, "z"), (62, "10"), (3843, "zz")],
)
def test_known_values(value: int, text: str) -> None:
    assert encode(value) == text
    assert decode(text) == value


def test_max_value_and_fixed_width() -> None:
    assert encode(MAX_VALUE) == "AzL8n0Y58m7"
    assert reference_value("AzL8n0Y58m7") == 2**63 - 1
    assert len(encode(MAX_VALUE)) == FIXED_WIDTH == 11
    assert 62 ** (FIXED_WIDTH - 1) <= MAX_VALUE < 62**FIXED_WIDTH
    assert encode_fixed(1) == "00000000001"


@given(values)
def test_round_trip(value: int) -> None:
    text = encode(value)
    assert decode(text) == value
    assert reference_value(text) == value
    assert text == "0" or text[0] != "0"  # shortest form: no padding


@given(values)
def test_fixed_round_trip(value: int) -> None:
    text = encode_fixed(value)
    assert len(text) == FIXED_WIDTH
    assert decode(text) == value


@given(values, values)
def test_fixed_width_order_is_numeric_order(a: int, b: int) -> None:
    assert (encode_fixed(a) < encode_fixed(b)) == (a < b)
    assert (encode_fixed(a) == encode_fixed(b)) == (a == b)


@given(st.lists(values, min_size=2, max_size=50))
def test_sorting_fixed_strings_sorts_numbers(numbers: list[int]) -> None:
    assert [decode(t) for t in sorted(encode_fixed(n) for n in numbers)] == sorted(numbers)


@given(values, st.integers(min_value=11, max_value=20))
def test_width_pads_with_zeros(value: int, width: int) -> None:
    text = encode(value, width=width)
    assert len(text) == width
    assert text.lstrip("0") == encode(value).lstrip("0")


@pytest.mark.parametrize(
    ("bits", "width"),
    [(47, 8), (53, 9), (63, 11)],
)
def test_chibrary_capacities(bits: int, width: int) -> None:
    # `bits` is the most that `width` characters hold: 2**bits - 1 fits, 2**(bits+1) - 1 does not.
    assert len(encode(2**bits - 1)) == width
    assert encode(2**bits - 1, width=width) == encode(2**bits - 1)
    if bits < 63:
        assert len(encode(2 ** (bits + 1) - 1)) == width + 1


def test_encode_rejects_negative() -> None:
    with pytest.raises(Base62Error, match=r"negative number -1; values must be in 0\.\.2\*\*63-1"):
        encode(-1)


def test_encode_rejects_over_63_bits() -> None:
    with pytest.raises(Base62Error, match=r"over 2\*\*63-1"):
        encode(2**63)


def test_encode_rejects_too_small_width() -> None:
    with pytest.raises(Base62Error, match=r"needs 2 base62 characters but width=1; pass a larger"):
        encode(62, width=1)
    assert encode(61, width=1) == "z"


@pytest.mark.parametrize("bad", [True, 1.0, "12"])
def test_encode_rejects_non_int(bad: object) -> None:
    with pytest.raises(TypeError, match="int"):
        encode(bad)  # type: ignore[arg-type]


def test_decode_rejects_empty() -> None:
    with pytest.raises(Base62Error, match="empty string"):
        decode("")


def test_decode_rejects_bytes() -> None:
    with pytest.raises(TypeError, match="str"):
        decode(b"12")  # type: ignore[arg-type]


def test_decode_rejects_over_63_bits() -> None:
    assert decode("AzL8n0Y58m7") == MAX_VALUE
    assert reference_value("AzL8n0Y58m8") == 2**63
    for text in ["AzL8n0Y58m8", "zzzzzzzzzzz", "1" + "0" * 11, "z" * 10_000]:
        with pytest.raises(Base62Error, match=r"more than 2\*\*63-1"):
            decode(text)


def test_decode_accepts_leading_zeros() -> None:
    assert decode("0" * 50 + "z") == 61


@given(base62_text, bad_characters, base62_text)
def test_decode_names_bad_character_and_position(prefix: str, bad: str, suffix: str) -> None:
    text = prefix + bad + suffix
    with pytest.raises(InvalidCharacterError) as caught:
        decode(text)
    assert caught.value.character == bad
    assert caught.value.position == len(prefix)
    assert f"{bad!r} at position {len(prefix)}" in str(caught.value)


@pytest.mark.parametrize("text", ["ab-c", "ab_c", "ab c", "ab+c", "ab=c", "abéc"])
def test_decode_rejects_url_and_base64_characters(text: str) -> None:
    with pytest.raises(InvalidCharacterError, match="at position 2"):
        decode(text)


def test_base62_errors_are_value_errors() -> None:
    assert issubclass(InvalidCharacterError, Base62Error)
    assert issubclass(Base62Error, ValueError)
    assert issubclass(Base62Error, IdFieldsError)


# --- permutation ------------------------------------------------------------------------


def in_domain(permutation: KeyedPermutation) -> st.SearchStrategy[int]:
    return st.integers(min_value=1, max_value=permutation.max_value)


@pytest.mark.parametrize("bits", [20, 21])
def test_narrowest_widths_stay_in_range_without_collisions(bits: int) -> None:
    permutation = KeyedPermutation(KEY, bits=bits)
    domain = [*range(1, 3000), *range(2**bits - 3000, 2**bits)]
    outputs = [permutation.encode(i) for i in domain]
    assert len(set(outputs)) == len(domain)  # one-to-one
    assert all(0 < value < 2**bits for value in outputs)  # never 0, never past the width
    assert [permutation.decode(o) for o in outputs] == domain


@given(keys, st.data())
def test_round_trip_63_bits(key: bytes, data: st.DataObject) -> None:
    permutation = KeyedPermutation(key)
    identifier = data.draw(in_domain(permutation))
    public = permutation.encode(identifier)
    assert 1 <= public <= 2**63 - 1
    assert permutation.decode(public) == identifier


@given(keys, st.data())
def test_round_trip_53_bits(key: bytes, data: st.DataObject) -> None:
    permutation = KeyedPermutation(key, bits=53)
    identifier = data.draw(in_domain(permutation))
    public = permutation.encode(identifier)
    assert 1 <= public <= 2**53 - 1
    assert permutation.decode(public) == identifier


@given(st.integers(min_value=20, max_value=63), st.data())
def test_round_trip_any_width(bits: int, data: st.DataObject) -> None:
    permutation = KeyedPermutation(KEY, bits=bits)
    identifier = data.draw(in_domain(permutation))
    public = permutation.encode(identifier)
    assert 1 <= public < 2**bits
    assert permutation.decode(public) == identifier
    assert permutation.encode(permutation.decode(identifier)) == identifier


@pytest.mark.parametrize(
    ("bits", "expected"),
    [
        (63, [8376298721654599429, 2754270991930772873, 3452283292271291950]),
        (53, [4970912591049618, 3269792435132150, 5375399572329276]),
        (20, [929092, 256037, 223245]),
    ],
)
def test_known_answers_are_stable(bits: int, expected: list[int]) -> None:
    # Public IDs end up in URLs: any change to rounds or key derivation breaks every link.
    permutation = KeyedPermutation(KEY, bits=bits)
    assert [permutation.encode(i) for i in (1, 2, 3)] == expected
    assert [permutation.decode(p) for p in expected] == [1, 2, 3]


def test_same_key_same_permutation() -> None:
    first, second = KeyedPermutation(KEY), KeyedPermutation(bytes.fromhex(KEY))
    assert [first.encode(i) for i in range(1, 100)] == [second.encode(i) for i in range(1, 100)]


@given(keys, keys)
def test_different_keys_give_different_permutations(key_a: bytes, key_b: bytes) -> None:
    if key_a == key_b:
        key_b = hashlib.blake2b(key_b, digest_size=32).digest()
    a, b = KeyedPermutation(key_a), KeyedPermutation(key_b)
    matches = sum(a.encode(i) == b.encode(i) for i in range(1, 65))
    assert matches == 0


def test_different_widths_give_unrelated_permutations() -> None:
    wide, narrow = KeyedPermutation(KEY, bits=63), KeyedPermutation(KEY, bits=53)
    assert sum(wide.encode(i) == narrow.encode(i) for i in range(1, 65)) == 0


@pytest.mark.parametrize("bits", [63, 53, 32])
@pytest.mark.parametrize("start", [1, 10**6, 2**31])
def test_consecutive_ids_are_not_enumerable(bits: int, start: int) -> None:
    permutation = KeyedPermutation(KEY, bits=bits)
    outputs = [permutation.encode(i) for i in range(start, start + 1000)]
    assert len(set(outputs)) == 1000
    gaps = [b - a for a, b in itertools.pairwise(outputs)]
    # Not monotonic: a shuffle rises about half the time (binomial, sd ~16 of 999).
    assert 400 < sum(gap > 0 for gap in gaps) < 600
    # Neighbours land far apart, never next to each other.
    assert min(abs(gap) for gap in gaps) > 1
    assert statistics.median(abs(gap) for gap in gaps) > permutation.max_value / 8
    # Spread over the whole range: every sixteenth of it is hit.
    assert {o >> (bits - 4) for o in outputs} == set(range(16))


@pytest.mark.parametrize("bad", [0, -1, 2**63, 2**64])
def test_encode_and_decode_reject_out_of_range(bad: int) -> None:
    permutation = KeyedPermutation(KEY)
    with pytest.raises(ValueOutOfRange, match=r"expected 1\.\.9223372036854775807"):
        permutation.encode(bad)
    with pytest.raises(ValueOutOfRange, match="out of range"):
        permutation.decode(bad)


def test_53_bit_range_is_enforced() -> None:
    permutation = KeyedPermutation(KEY, bits=53)
    assert permutation.bits == 53
    assert permutation.max_value == 2**53 - 1
    permutation.decode(2**53 - 1)
    with pytest.raises(ValueOutOfRange, match=r"expected 1\.\.9007199254740991"):
        permutation.encode(2**53)


@pytest.mark.parametrize("bits", [8, 19, 64, 0])
def test_unsupported_widths(bits: int) -> None:
    with pytest.raises(PermutationError, match=r"use 20\.\.63"):
        KeyedPermutation(KEY, bits=bits)


@pytest.mark.parametrize("key", [b"", bytes(range(100, 131)), KEY[:62]])
def test_short_key_is_rejected_with_the_fix(key: bytes | str) -> None:
    with pytest.raises(PermutationKeyError, match="shorter than 32") as caught:
        KeyedPermutation(key)
    assert "secrets.token_hex(32)" in str(caught.value)


def test_hex_and_base64_texts_are_the_same_key() -> None:
    raw = bytes.fromhex(KEY)
    texts = [
        KEY,
        KEY.upper(),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
    ]
    expected = KeyedPermutation(raw).encode(42)
    assert [KeyedPermutation(text).encode(42) for text in texts] == [expected] * 4


def test_non_bytes_key_is_a_key_error() -> None:
    with pytest.raises(PermutationKeyError, match="bytes or str"):
        KeyedPermutation(12345678901234567890)  # type: ignore[arg-type]


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDFIELDS_PERMUTATION_KEY", KEY)
    monkeypatch.setenv("OTHER_KEY", KEY)
    expected = KeyedPermutation(KEY, bits=53).encode(42)
    assert KeyedPermutation.from_env().encode(42) == KeyedPermutation(KEY).encode(42)
    assert KeyedPermutation.from_env("OTHER_KEY", bits=53).encode(42) == expected


@pytest.mark.parametrize("value", [None, ""])
def test_from_env_unset_names_variable_and_fix(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("IDFIELDS_PERMUTATION_KEY", raising=False)
    else:
        monkeypatch.setenv("IDFIELDS_PERMUTATION_KEY", value)
    with pytest.raises(PermutationKeyError, match="IDFIELDS_PERMUTATION_KEY is not set") as caught:
        KeyedPermutation.from_env()
    assert "secrets.token_hex(32)" in str(caught.value)


def test_key_never_shown() -> None:
    key = KEY
    permutation = KeyedPermutation(key, bits=53)
    assert repr(permutation) == "KeyedPermutation(bits=53, key=<hidden>)"
    assert str(permutation) == repr(permutation)
    texts = [repr(permutation), str(permutation)]
    for call in (
        lambda: permutation.encode(0),
        lambda: permutation.decode(2**53),
        lambda: pickle.dumps(permutation),
        lambda: KeyedPermutation(key, bits=99),
        lambda: KeyedPermutation(key[:60]),
    ):
        with pytest.raises((IdFieldsError, ValueError, TypeError)) as caught:
            call()
        texts.append(str(caught.value))
    for text in texts:
        assert key[:16] not in text


def test_raw_key_is_not_kept() -> None:
    key = bytes.fromhex(KEY)
    permutation = KeyedPermutation(key)
    stored = [getattr(permutation, slot) for slot in KeyedPermutation.__slots__]
    assert not hasattr(permutation, "__dict__")
    assert all(key not in repr(value).encode() for value in stored)
    assert all(value != key for value in stored)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_refuses_pickling(protocol: int) -> None:
    with pytest.raises(TypeError, match=r"cannot be pickled.*from_env"):
        pickle.dumps(KeyedPermutation(KEY), protocol=protocol)


def test_copies_share_the_immutable_instance() -> None:
    permutation = KeyedPermutation(KEY)
    assert copy.copy(permutation) is permutation
    assert copy.deepcopy({"p": permutation})["p"] is permutation


def test_permutation_errors_are_configuration_errors() -> None:
    """Not ValueError: Django's URL resolver and DRF would answer a wrong key with 404."""
    assert issubclass(PermutationKeyError, PermutationError)
    assert issubclass(PermutationError, ConfigurationError)
    assert issubclass(ConfigurationError, IdFieldsError)
    assert not issubclass(PermutationError, ValueError | TypeError | LookupError)
