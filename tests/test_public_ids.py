"""Public ID strings (idfields.codecs._public / checked) and the keys behind them (keys)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import traceback
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from idfields.codecs import (
    KeyedPermutation,
    PermutationKeyError,
    PublicIdError,
    PublicIds,
    _checked,
    derive_key,
    generate_key,
    parse_key,
)
from idfields.codecs._public import key_id_of
from idfields.errors import IdFieldsError
from idfields.layouts import BUILTIN_LAYOUTS

KEY = "5f0c3be4d1a27e9668a0f3c7b2d45e18c9a7f0e1d2b3c4a5968778695a4b3c2d"
OLD_KEY = "0a9b8c7d6e5f40312233445566778899aabbccddeeff00112233445566778899"
SNOWFLAKE = BUILTIN_LAYOUTS["snowflake"]
CODEC = PublicIds(KEY, label="shop.order")
ids = st.integers(min_value=1, max_value=2**63 - 1)


# --- keys ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("password12345678", "shorter than 32"),  # valid base64 of 12 bytes
        ("correct horse battery staple 0123456789", "neither hex nor base64"),
        ("correcthorsebatterystaplecorrecthorsebatterystaple", "one case only"),
        (b"correct horse battery staple 0123456789", "printable text"),
        (b"\x01\x02" * 16, "2 different byte values"),
        ("ab" * 32, "1 different byte values"),
        ("0102" * 16, "2 different byte values"),
        ("ab!", "neither hex nor base64"),
    ],
)
def test_weak_keys_are_refused(key: str | bytes, problem: str) -> None:
    with pytest.raises(PermutationKeyError, match=problem) as caught:
        KeyedPermutation(key)
    assert "idfields key new" in str(caught.value)


def test_random_keys_in_every_written_form_are_accepted() -> None:
    raw = secrets.token_bytes(32)
    forms: list[str | bytes] = [
        raw,
        raw.hex(),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        f"  {raw.hex()}\n",  # as read from a file
    ]
    assert {parse_key(form) for form in forms} == {raw}
    assert len(bytes.fromhex(generate_key())) == 32


def test_a_passphrase_goes_through_scrypt_only() -> None:
    with pytest.raises(PermutationKeyError):
        KeyedPermutation("a long and memorable passphrase of words")
    key = derive_key("a long and memorable passphrase of words", "shop-prod", n=2**14)
    assert key == derive_key("a long and memorable passphrase of words", "shop-prod", n=2**14)
    assert key != derive_key("a long and memorable passphrase of words", "shop-dev", n=2**14)
    KeyedPermutation(key)  # random-looking bytes: accepted
    with pytest.raises(PermutationKeyError, match="too cheap"):
        derive_key("words", "salt", n=2**10)
    with pytest.raises(PermutationKeyError, match="needs a salt"):
        derive_key("words", "")


def _frames_hold(error: BaseException, secret: str) -> list[str]:
    """Frames of ``error``'s traceback whose locals show ``secret`` (as Django's debug page
    and error reporters would)."""
    found = []
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == __file__:
            continue  # the test's own frame holds the key it passed
        shown = " ".join(repr(value) for value in frame.f_locals.values())
        if secret in shown or bytes.fromhex(secret).hex() in shown:
            found.append(f"{frame.f_code.co_name} in {frame.f_code.co_filename}")
    return found


@pytest.mark.parametrize(
    "build",
    [
        lambda key: KeyedPermutation(key, bits=99),
        lambda key: KeyedPermutation(key[:60]),
        lambda key: KeyedPermutation(key, label=5),
        lambda key: PublicIds([key, key], label="shop.order"),
        lambda key: PublicIds([key, "ab!"], label="shop.order"),
        lambda key: PublicIds([key], label=""),
        lambda key: PublicIds(iter([key, 5]), label="shop.order"),  # type: ignore[list-item]
        lambda key: derive_key(key, "salt", n=2**10),
    ],
)
def test_keys_are_not_left_in_traceback_locals(build: Callable[[str], object]) -> None:
    with pytest.raises((IdFieldsError, ValueError, TypeError)) as caught:
        build(KEY)
    assert KEY[:16] not in str(caught.value)
    assert _frames_hold(caught.value, KEY[:60]) == []


@pytest.mark.parametrize("key", [12345678901234567890, ["a", "list"], 3.5])
def test_a_wrong_typed_key_is_named_by_its_type_only(key: object) -> None:
    with pytest.raises(PermutationKeyError, match=f"not {type(key).__name__}") as caught:
        KeyedPermutation(key)  # type: ignore[arg-type]
    assert str(key) not in str(caught.value)


# --- the string form ------------------------------------------------------------------------------


def test_strings_have_one_fixed_width_and_one_case() -> None:
    texts = [CODEC.encode(i) for i in (1, 2, 10**6, 2**62, 2**63 - 1)]
    assert {len(text) for text in texts} == {15} == {CODEC.length}
    assert all(set(text) <= set(_checked.ALPHABET) for text in texts)
    assert PublicIds(KEY, label="shop.order", bits=53).length == 13


@given(ids)
def test_round_trip(id: int) -> None:
    assert CODEC.decode(CODEC.encode(id)) == id


@given(ids, st.data())
def test_every_single_character_typo_is_refused(id: int, data: st.DataObject) -> None:
    text = CODEC.encode(id)
    position = data.draw(st.integers(0, len(text) - 1))
    typo = data.draw(st.sampled_from(_checked.ALPHABET).filter(lambda c: c != text[position]))
    with pytest.raises(PublicIdError, match=r"check character|key this application"):
        CODEC.decode(text[:position] + typo + text[position + 1 :])


def test_every_single_character_typo_of_one_id_is_refused_exhaustively() -> None:
    text = CODEC.encode(7212345678901234567)
    refused = 0
    for position in range(len(text)):
        for typo in _checked.ALPHABET.replace(text[position], ""):
            with pytest.raises(PublicIdError):
                CODEC.decode(text[:position] + typo + text[position + 1 :])
            refused += 1
    assert refused == 15 * 30


@given(ids, st.data())
def test_every_adjacent_swap_is_refused(id: int, data: st.DataObject) -> None:
    text = CODEC.encode(id)
    position = data.draw(st.integers(0, len(text) - 2))
    if text[position] == text[position + 1]:
        return  # swapping equal characters changes nothing
    swapped = text[:position] + text[position + 1] + text[position] + text[position + 2 :]
    with pytest.raises(PublicIdError):
        CODEC.decode(swapped)


@given(st.text(alphabet=_checked.ALPHABET, min_size=15, max_size=15))
def test_canonical_form_is_unique(text: str) -> None:
    """Any accepted string is the one string encode() gives for its ID."""
    try:
        id = CODEC.decode(text)
    except PublicIdError:
        return
    assert CODEC.encode(id) == text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (str.upper, "lowercase"),
        (lambda text: "0" + text, "16 characters long; a public ID is exactly 15"),
        (lambda text: text[1:], "14 characters long"),
        (lambda text: text[:5] + "-" + text[6:], "has '-' at position 5"),
        (lambda text: text[:3] + "l" + text[4:], "'l' is never used"),
        (lambda text: text + " ", "16 characters"),
    ],
)
def test_other_forms_are_refused_with_the_reason(
    change: Callable[[str], str], message: str
) -> None:
    text = CODEC.encode(7212345678901234567)
    with pytest.raises(PublicIdError, match=message):
        CODEC.decode(change(text))


def test_a_long_hostile_string_is_quoted_short() -> None:
    with pytest.raises(PublicIdError) as caught:
        CODEC.decode("x" * 100_000)
    assert len(str(caught.value)) < 200


# --- keys, labels and layouts ---------------------------------------------------------------------


def test_rotation_resolves_old_and_new_strings() -> None:
    old = PublicIds(OLD_KEY, label="shop.order")
    rotated = PublicIds([KEY, OLD_KEY], label="shop.order")
    issued_before = old.encode(123456789)
    issued_after = rotated.encode(123456789)
    assert issued_after != issued_before
    assert issued_after == CODEC.encode(123456789)  # the newest key makes new strings
    assert rotated.decode(issued_before) == rotated.decode(issued_after) == 123456789
    with pytest.raises(PublicIdError, match="key this application does not hold"):
        CODEC.decode(issued_before)  # once the old key is dropped


def test_keys_sharing_a_key_id_are_refused() -> None:
    first = bytes.fromhex(KEY)
    for counter in range(1000):
        other = hashlib.blake2b(counter.to_bytes(4, "big"), digest_size=32).digest()
        if key_id_of(other) == key_id_of(first):
            break
    with pytest.raises(PermutationKeyError, match="share key id"):
        PublicIds([other, first], label="shop.order")


def test_a_label_gives_each_table_unrelated_strings() -> None:
    orders, users = CODEC, PublicIds(KEY, label="shop.user")
    assert all(orders.encode(i)[1:] != users.encode(i)[1:] for i in range(1, 200))
    refused = 0
    for i in range(1, 200):
        try:
            assert users.decode(orders.encode(i)) != i
        except PublicIdError:
            refused += 1
    assert refused == 0  # no layout given: another table's string is just some other ID


def test_ids_that_cannot_be_real_for_the_layout_are_refused() -> None:
    codec = PublicIds(KEY, label="shop.order", layout=SNOWFLAKE)
    now = SNOWFLAKE.compose(timestamp=SNOWFLAKE.tick_of(time.time_ns()), node=5, sequence=0)
    assert codec.decode(codec.encode(now)) == now
    hour_ahead = SNOWFLAKE.compose(
        timestamp=SNOWFLAKE.tick_of(time.time_ns() + 3600 * 10**9), node=5, sequence=0
    )
    with pytest.raises(PublicIdError, match="from the future"):
        codec.decode(codec.encode(hour_ahead))


def test_wrong_key_strings_are_refused_or_impossible() -> None:
    """Another key's strings fail the key id (30 in 31) or name impossible IDs (mostly a time
    in the future); none gives back the row it was made for."""
    ours = PublicIds(KEY, label="shop.order", layout=SNOWFLAKE)
    now = SNOWFLAKE.tick_of(time.time_ns())
    accepted = 0
    for seed in range(300):
        row = SNOWFLAKE.compose(timestamp=now - seed * 997, node=seed % 1024, sequence=0)
        other_key = hashlib.blake2b(seed.to_bytes(2, "big"), digest_size=32).digest()
        try:
            assert ours.decode(PublicIds(other_key, label="shop.order").encode(row)) != row
            accepted += 1
        except PublicIdError:
            pass
    assert accepted <= 3  # expected 300 / 31 * (share of snowflake times already past)


def test_repr_hides_the_keys() -> None:
    assert repr(CODEC) == "PublicIds(label='shop.order', keys=1, key=<hidden>)"
