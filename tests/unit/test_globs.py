"""Glob patterns (``prep.globs``): which characters make a glob, where a pattern's fixed
leading part ends; checked against ``fnmatch``/``glob``'s own notion of a magic character."""

from __future__ import annotations

import glob

import pytest

from prep.globs import fixed_lead, has_glob


@pytest.mark.parametrize("text", ["*.parquet", "part-?.parquet", "part-[0-9].parquet", "**",
                                  "a*b", "[", "data/x?"])
def test_a_star_a_question_mark_or_a_bracket_makes_a_glob(text: str) -> None:
    assert has_glob(text)
    assert glob.has_magic(text)  # the oracle: what glob.glob expands


@pytest.mark.parametrize("text", ["", "part-00000.parquet", "a/b/c", "{a,b}", "x]y", "~user",
                                  "100%", "a+b", "c:d"])
def test_other_characters_are_literal(text: str) -> None:
    assert not has_glob(text)
    assert not glob.has_magic(text)


def test_the_fixed_lead_stops_at_the_first_segment_with_a_glob() -> None:
    assert fixed_lead(["data", "en", "2024-*", "part-?.parquet"]) == ["data", "en"]
    assert fixed_lead(["**", "x.parquet"]) == []
    assert fixed_lead(["a", "b[12]", "c"]) == ["a"]


def test_a_pattern_without_a_glob_is_all_lead() -> None:
    assert fixed_lead(["a", "b", "c.parquet"]) == ["a", "b", "c.parquet"]
    assert fixed_lead([]) == []


def test_segments_after_the_first_glob_are_not_lead_even_if_fixed() -> None:
    # "fixed" after a glob still depends on what the glob matched.
    assert fixed_lead(["root", "*", "fixed", "name.parquet"]) == ["root"]
