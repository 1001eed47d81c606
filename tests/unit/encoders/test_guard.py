"""The guard (issue 38): the shipped sets, keyed by engine version and pattern, and the
scan that sends a document holding a guarded code point to the reference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, GPT2_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.encoders.engine import Reference
from prep.encoders.gigatoken import Declined, GigatokenEncoder, load_gigatoken
from prep.encoders.guard import (
    BYTE_LEVEL_PATTERN,
    Guard,
    format_ranges,
    guard_for,
    parse_ranges,
    pattern_key,
    shipped,
    split_pattern,
)
from prep.encoders.guard_derive import with_pattern
from prep.state.versions import installed_version

VERSION = installed_version("gigatoken") or ""


def test_ranges_are_compact_and_round_trip() -> None:
    cps = [0x88F, 0xA7CE, 0xA7CF, 0xA7D2, 0x32000, 0x32001, 0x32002]
    assert format_ranges(cps) == ["088F", "A7CE-A7CF", "A7D2", "32000-32002"]
    assert parse_ranges(format_ranges(cps)) == (
        (0x88F, 0x88F), (0xA7CE, 0xA7CF), (0xA7D2, 0xA7D2), (0x32000, 0x32002))


def test_the_pattern_is_the_one_gigatoken_identifies() -> None:
    gpt2 = json.loads((GPT2_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    assert split_pattern(gpt2) == BYTE_LEVEL_PATTERN  # ByteLevel's own regex
    cl100k = json.loads((FIXTURES / "cl100k" / "tokenizer.json").read_text(encoding="utf-8"))
    regex = cl100k["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    assert split_pattern(cl100k) == regex
    cl100k["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"String": " "}
    assert split_pattern(cl100k) is None


def test_gpt2_ships_with_the_issues_example_guarded() -> None:
    guard = guard_for("gigatoken", VERSION, BYTE_LEVEL_PATTERN)
    assert isinstance(guard, Guard)
    assert 0x32DBA in guard and 0xA7CE in guard and 0x0C5C in guard
    assert 0xE9 not in guard and 0x4E2D not in guard  # é and 中 are classified alike


def test_a_pattern_or_version_without_a_set_has_no_guard() -> None:
    why = guard_for("gigatoken", VERSION, r"\p{L}+|\s+")
    assert isinstance(why, str) and "no guard set ships for gigatoken" in why
    assert "scripts/derive_guard.py" in why
    assert shipped("gigatoken", "0.0.0-never") == {}
    assert isinstance(guard_for("gigatoken", "0.0.0-never", BYTE_LEVEL_PATTERN), str)
    assert "plain string" in str(guard_for("gigatoken", VERSION, None))


def test_each_shipped_entry_is_keyed_by_its_patterns_sha256() -> None:
    entries = shipped("gigatoken", VERSION)
    assert entries
    for key, entry in entries.items():
        assert key == pattern_key(entry["pattern"])
        assert entry["code_points"] == sum(hi - lo + 1 for lo, hi in parse_ranges(entry["ranges"]))


@pytest.mark.parametrize("text, hit", [
    ("plain ASCII, never scanned", False),
    ("café, 中文, Ж, emoji 👍", False),
    ("an ideograph \U00032DBA inside", True),
    ("\uA7CE", True),
    ("just after \U000323AF\U00033480", False),
])
def test_hits_finds_the_documents_holding_a_guarded_code_point(text: str, hit: bool) -> None:
    guard = Guard(((0xA7CE, 0xA7CF), (0x323B0, 0x3347F)))
    texts = ["x", text, "y"]
    assert guard.hits(texts, [t.encode() for t in texts]) == ([1] if hit else [])
    assert Guard(()).hits([text], [text.encode()]) == []


def test_the_utf8_scan_finds_exactly_the_guarded_code_points() -> None:
    # Ranges across every UTF-8 length and continuation-byte boundary, checked against
    # plain membership on every code point (the regex over bytes is built, not written).
    ranges = ((0x88F, 0x88F), (0x7F0, 0x812), (0xA7CE, 0xA7CF), (0xFFF0, 0x10040),
              (0x32000, 0x33FFF), (0x3FFFE, 0x40001), (0x10FFF0, 0x10FFFF))
    guard = Guard(ranges)
    cps = [c for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [chr(c) for c in cps]
    found = set(guard.hits(texts, [t.encode() for t in texts]))
    assert {cps[i] for i in found} == {c for c in cps if c in guard}


# The guard in the engine: what it routes, and that the routed ids are the reference's.

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def cl100k_with(pattern: str, directory: Path) -> Path:
    """The cl100k fixture with another split regex (one gigatoken accepts)."""
    directory.mkdir(parents=True, exist_ok=True)
    return with_pattern(FIXTURES / "cl100k" / "tokenizer.json", pattern,
                        directory / "tokenizer.json")


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, GigatokenEncoder]:
    llama3 = cl100k_with(LLAMA3, tmp_path_factory.mktemp("llama3"))
    return {name: load_gigatoken(path.read_bytes(), Reference(str(path)))
            for name, path in (("gpt2", GPT2_DIR / "tokenizer.json"), ("llama3", llama3))}


def test_the_issues_example_is_routed_and_gets_tiktokens_ids(
        engines: dict[str, GigatokenEncoder]) -> None:
    from golden_corpus import tiktoken_gpt2

    engine = engines["gpt2"]
    texts = ["Hello world", "a\U00032DBA'd x", "café"]
    utf8 = [t.encode() for t in texts]
    assert engine.routed(texts, utf8) == [1]
    got = [ids.tolist() for ids in engine.encode_flat(texts, utf8).split()]
    assert got[1] == [64, 172, 110, 114, 118, 6, 67, 2124]  # the issue's hf ids
    assert got == [tiktoken_gpt2(FIXTURES).encode_ordinary(t) for t in texts]
    # unguarded, gigatoken alone: 'd as one token (1549), the issue's difference
    assert engine.encode_fast([utf8[1]]).ids.tolist() == [64, 172, 110, 114, 118, 1549, 2124]


def test_counts_show_a_plain_document_went_through_the_fast_engine(
        engines: dict[str, GigatokenEncoder]) -> None:
    engine = engines["gpt2"]
    before = dict(engine.documents)
    texts = ["plain text", "\uA7CE'd", "naïve"]
    engine.encode_flat(texts, [t.encode() for t in texts])
    assert {k: n - before[k] for k, n in engine.documents.items()} == {"gigatoken": 2, "hf": 1}


PIECES = st.one_of(
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",)),
    st.sampled_from(["'d", "'S", " ", "  ", "\t", "\r\n", "\n", "1", "123", "x", "!", ".",
                     "\U00032DBA", "\uA7CE", "\u0C5C", "\u088F"]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(PIECES, max_size=24).map("".join), min_size=1, max_size=8))
def test_guard_routed_ids_equal_the_reference_on_any_text(
        engines: dict[str, GigatokenEncoder], texts: list[str]) -> None:
    for engine in engines.values():
        utf8 = [t.encode("utf-8") for t in texts]
        got, want = engine.encode_flat(texts, utf8), engine.reference(texts, utf8)
        assert np.array_equal(got.offsets, want.offsets)
        assert np.array_equal(got.ids, want.ids)


def test_the_engine_declines_a_pattern_without_a_shipped_set(tmp_path: Path) -> None:
    path = cl100k_with(QWEN2, tmp_path)  # gigatoken knows this regex; no set ships for it
    with pytest.raises(Declined, match=f"no guard set ships for gigatoken {VERSION} and the "
                                       r"split pattern .*derive one with scripts/derive_guard"):
        load_gigatoken(path.read_bytes(), Reference(str(path)))
