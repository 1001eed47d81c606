"""Split assignment (docs/format.md step 6: --val-fraction, --split-column), against its text.

Oracle: a document is val iff the first 8 bytes (big-endian) of SHA-256 of
``f"{seed}\\0{text}"`` as UTF-8 are ``< int(F * 2**64)``.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.split import TRAIN, VAL, column_split, hash_split, seed_prefix, val_threshold


def spec_is_val(text: str, seed: int, fraction: float) -> bool:
    digest = hashlib.sha256(f"{seed}\0{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < int(fraction * 2**64)


def prep_split(text: str, seed: int, fraction: float) -> int:
    return hash_split(text.encode(), seed_prefix(seed), val_threshold(fraction))


# Hand-computed anchors: the first 8 digest bytes as hex, read as a big-endian integer.
#   sha256(b"1337\x00hello").hexdigest()[:16] and where it falls.
def _top64(data: bytes) -> int:
    return int(hashlib.sha256(data).hexdigest()[:16], 16)


def test_seed_prefix_is_seed_then_nul() -> None:
    assert seed_prefix(1337) == b"1337\x00"
    assert seed_prefix(0) == b"0\x00"


def test_threshold_is_int_of_fraction_times_2_64() -> None:
    assert val_threshold(0.5) == 2**63
    assert val_threshold(0.25) == 2**62
    assert val_threshold(0.01) == int(0.01 * 2**64)


@pytest.mark.parametrize(
    ("text", "seed"),
    [("hello", 1337), ("Hi", 1337), ("é", 1337), ("ok", 0), ("日本語", 42), (" x ", 2**32 - 1)],
)
def test_fixed_cases_by_hand(text: str, seed: int) -> None:
    top = _top64(f"{seed}\0{text}".encode())
    # A threshold just above the document's hash makes it val, at or below makes it train.
    assert hash_split(text.encode(), f"{seed}\0".encode(), top + 1) == VAL
    assert hash_split(text.encode(), f"{seed}\0".encode(), top) == TRAIN
    # and with the documented fraction arithmetic:
    expected = VAL if top < int(0.3 * 2**64) else TRAIN
    assert prep_split(text, seed, 0.3) == expected


# Worked by hand: the first 16 hex digits of sha256(f"{seed}\0{text}".encode()), and the
# threshold int(0.3 * 2**64) = 0x4ccccccccccccc00 (the float 0.3 rounds below 0x4ccc...cd).
HAND_CASES = [
    ("hello", 1337, "4bd0cc2ffce1d6d0", VAL),  # 0x4bd0... < 0x4ccc...
    ("Hi", 1337, "48e465f4ce5703e7", VAL),
    ("é", 1337, "e48c28b1112d540f", TRAIN),  # 0xe48c... >= 0x4ccc...
    ("ok", 1337, "361ff1a3e09e4c14", VAL),
    ("ok", 0, "324c34fe910e11ba", VAL),
]


def test_threshold_for_0_3_by_hand() -> None:
    assert val_threshold(0.3) == 0x4CCCCCCCCCCCCC00


@pytest.mark.parametrize(("text", "seed", "top_hex", "split"), HAND_CASES)
def test_known_digests_by_hand(text: str, seed: int, top_hex: str, split: int) -> None:
    assert hashlib.sha256(f"{seed}\0{text}".encode()).hexdigest()[:16] == top_hex
    assert prep_split(text, seed, 0.3) == split
    # 0.01: threshold 0x028f5c28f5c28f.. is below every hash here, so all train.
    assert prep_split(text, seed, 0.01) == TRAIN


def test_seed_changes_assignment() -> None:
    texts = [f"document number {i}" for i in range(200)]
    a = [prep_split(t, 1, 0.5) for t in texts]
    b = [prep_split(t, 2, 0.5) for t in texts]
    assert a != b
    assert a == [VAL if spec_is_val(t, 1, 0.5) else TRAIN for t in texts]
    assert b == [VAL if spec_is_val(t, 2, 0.5) else TRAIN for t in texts]


def test_fraction_is_roughly_respected() -> None:
    texts = [f"doc {i}" for i in range(4000)]
    n_val = sum(prep_split(t, 1337, 0.1) == VAL for t in texts)
    assert 300 < n_val < 500  # 400 expected; binomial sd ~19


def test_text_is_not_stripped_or_normalized() -> None:
    # The hash covers the text exactly as stored: " a" and "a" and "a\u0301" vs "á" differ.
    variants = ["a", " a", "a ", "á", "a\u0301"]
    for v in variants:
        assert prep_split(v, 7, 0.5) == (VAL if spec_is_val(v, 7, 0.5) else TRAIN)
    tops = {_top64(f"7\0{v}".encode()) for v in variants}
    assert len(tops) == len(variants)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(),
    seed=st.integers(0, 2**32 - 1),
    fraction=st.floats(min_value=1e-6, max_value=1 - 1e-6),
)
def test_hash_split_matches_spec(text: str, seed: int, fraction: float) -> None:
    expected = VAL if spec_is_val(text, seed, fraction) else TRAIN
    assert prep_split(text, seed, fraction) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("train", TRAIN), ("val", VAL)],
)
def test_column_split_accepts_train_and_val(value: str, expected: int) -> None:
    assert column_split(value) == expected


@pytest.mark.parametrize(
    "value",
    ["Train", "VAL", "validation", "test", " train", "train ", "", None, 0, 1, b"train", ["val"]],
)
def test_column_split_rejects_everything_else(value: object) -> None:
    assert column_split(value) is None
