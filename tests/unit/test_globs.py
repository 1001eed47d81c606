"""Glob patterns (``prep.globs``): which characters make a glob, where a pattern's fixed
leading part ends, which names a listing takes; checked against ``fnmatch``/``glob``'s own
notion of a magic character and against docs/format.md's list of names."""

from __future__ import annotations

import glob

import pytest

from prep.globs import fixed_lead, has_glob, listed


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


# docs/format.md: a listing takes *.parquet, *.arrow, *.jsonl, *.ndjson, and *.jsonl, *.json or
# *.ndjson with .gz, .zst or .zstd after it; a plain *.json is left out.
TAKEN = ["a.parquet", "a.arrow", "a.jsonl", "a.ndjson"] + [
    f"a.{stem}.{codec}" for stem in ("jsonl", "json", "ndjson") for codec in ("gz", "zst", "zstd")
]


@pytest.mark.parametrize("name", [*TAKEN, "DIR/B.JSONL.ZST", "x.NDJSON.Zstd"])
def test_a_listing_takes_every_documented_name(name: str) -> None:
    assert listed(name)


@pytest.mark.parametrize("name", ["dataset_info.json", "a.csv", "a.zst", "a.gz", "a.txt",
                                  "a.parquet.tmp", "a.jsonl.bz2"])
def test_a_listing_leaves_out_plain_json_and_other_names(name: str) -> None:
    assert not listed(name)
