"""The split patterns: GPT-2's worked example by hand, each pattern splitting as Hugging
Face's ``Split`` does (the reference) and as the ``regex`` module's ``findall`` reads the
same regex on ASCII text, gpt2's fast count (gigatoken, guarded) equal to the reference's on
any text, and the names."""

from __future__ import annotations

from collections import Counter

import bpe_reference as ref
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.tokenizer.pretokenize import (
    NAMES,
    PATTERNS,
    Splitter,
    check_name,
    count_pieces,
    name_of,
    pattern_of,
    split_json,
)

TEXT = ("Hello world, it's 2024!!  We'LL see:\tdon't\r\n\n  x 12345 日本語 👍🏽 a\x00b\n")


def test_gpt2_splits_words_numbers_punctuation_and_spaces_apart() -> None:
    """By hand from GPT-2's regex: a space joins the word after it, contractions split off,
    the last space of a run joins the next word, digits stay together."""
    assert Splitter("gpt2").split(["Hello world, it's 2024!!  We"])[0] == [
        "Hello", " world", ",", " it", "'s", " 2024", "!!", " ", " We"]


def test_gpt4_and_o200k_cut_numbers_in_threes() -> None:
    assert Splitter("gpt4").split(["x 1234567"])[0] == ["x", " ", "123", "456", "7"]
    assert Splitter("o200k").split(["Don'tStop"])[0] == ["Don't", "Stop"]


@pytest.mark.parametrize("name", list(PATTERNS))
def test_each_pattern_splits_as_tokenizers_and_as_the_regex_module(name: str) -> None:
    pieces = Splitter(name).split([TEXT, "", "a"])
    assert pieces == [ref.split(TEXT, PATTERNS[name]), [], ["a"]]
    ascii_text = TEXT.encode("ascii", "ignore").decode()
    assert Splitter(name).split([ascii_text])[0] == regex.findall(PATTERNS[name], ascii_text)
    assert "".join(pieces[0]) == TEXT


def test_none_keeps_each_document_whole_and_counting_counts_multiplicity() -> None:
    assert Splitter("none").split(["a b", ""]) == [["a b"], []]
    assert count_pieces(["the cat the", "the"], "gpt2") == {"the": 2, " cat": 1, " the": 1}


def test_names_patterns_and_the_split_json() -> None:
    assert NAMES == ("none", "gpt2", "gpt4", "o200k")
    assert pattern_of("none") is None and split_json("none") is None
    for name in PATTERNS:
        assert name_of(pattern_of(name)) == name
        assert split_json(name) == {"type": "Split", "pattern": {"Regex": PATTERNS[name]},
                                    "behavior": "Isolated", "invert": False}
    assert name_of(None) == "none" and name_of("x+") is None
    with pytest.raises(ValueError, match="pre-tokenizer 'gpt3': choose one of none, gpt2"):
        check_name("gpt3")


def test_gpt2s_fast_count_is_the_split_count_of_tokenizers() -> None:
    """gigatoken's counter for the plain documents, tokenizers' split for those holding a
    NUL (its separator) or a guarded code point (U+0C5C, U+088F): the same counts as the
    reference splitting every document."""
    fast = Splitter("gpt2")
    assert fast._fast is not None  # gigatoken and gpt2's guard set ship with prep
    texts = [TEXT, "plain words, 42 of them", "a\x00b", "x\u0c5cy \u088f1", "", "  \n\n ",
             "don't STOP'LL"] * 3
    got: Counter[str] = Counter()
    fast.count(texts, got)
    assert got == Counter(p for t in texts for p in ref.split(t, PATTERNS["gpt2"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8"), max_size=30), max_size=8))
def test_gpt2s_fast_count_on_any_text(texts: list[str]) -> None:
    got: Counter[str] = Counter()
    Splitter("gpt2").count(texts, got)
    assert got == Counter(p for t in texts for p in ref.split(t, PATTERNS["gpt2"]))
