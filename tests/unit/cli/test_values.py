"""Command-line values: counts in every spelling people use, refusals that say what is
accepted, and the closest option to a misspelled one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.cli.values import closest_option, format_count, parse_count

# Written out by hand (the three spellings of one hundred million, and more).
SPELLINGS = [
    ("100000000", 100_000_000),
    ("100_000_000", 100_000_000),
    ("1e8", 100_000_000),
    ("1E8", 100_000_000),
    ("1e+8", 100_000_000),
    ("100M", 100_000_000),
    ("100m", 100_000_000),
    ("0.1G", 100_000_000),
    ("1.5M", 1_500_000),
    ("2.5e3", 2_500),
    ("64K", 64_000),
    ("10B", 10_000_000_000),
    ("2T", 2_000_000_000_000),
    ("0", 0),
    (" 7 ", 7),
    ("123456789012345678901", 123456789012345678901),
]


@pytest.mark.parametrize(("text", "value"), SPELLINGS)
def test_every_spelling_gives_the_number(text: str, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("abc", "'abc' is not a whole number; write it as 100000000, 100_000_000, 1e8 or 100M"),
        ("", "'' is not a whole number"),
        ("1e-3", "'1e-3' is not a whole number"),
        ("2.5", "'2.5' is not a whole number (2.5)"),
        ("1.0000001M", "is not a whole number (1000000.1)"),
        ("1__000", "is not a whole number"),
        ("_1", "is not a whole number"),
        ("100MB", "is not a whole number"),
        ("1,000", "is not a whole number"),
        ("nan", "is not a whole number"),
        ("inf", "is not a whole number"),
        ("-5", "'-5' is negative; give a number >= 0"),
    ],
)
def test_junk_is_refused_with_the_accepted_forms(text: str, words: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_count(text)
    assert words in str(e.value)


def test_minimum() -> None:
    assert parse_count("1", minimum=1) == 1
    with pytest.raises(ValueError, match=r"'0' is too small; give a number >= 1$"):
        parse_count("0", minimum=1)
    with pytest.raises(ValueError, match=r"give a number >= 1,000$"):
        parse_count("999", minimum=1000)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(100_000_000, "100M"), (0, "0"), (512, "512"), (1_337, "1_337"), (64_000, "64K"),
     (1_500_000, "1500K"), (10**12, "1T"), (3 * 10**9, "3G")],
)
def test_format_count_is_short(value: int, shown: str) -> None:
    assert format_count(value) == shown


@settings(deadline=None)  # Hypothesis's 200 ms per example is a timing assertion
@given(st.integers(min_value=0, max_value=10**20))
def test_format_count_reads_back(value: int) -> None:
    assert parse_count(format_count(value)) == value


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=10**15))
def test_plain_and_underscored_forms_agree_with_int(value: int) -> None:
    assert parse_count(str(value)) == value
    assert parse_count(f"{value:_}") == value
    assert parse_count(f"{value}e0") == value


OPTIONS = ["--source", "--text-column", "--split-column", "--tokenizer", "--tokenizer-id",
           "--out", "--resume", "--refresh", "--seed", "-h", "--help"]


@pytest.mark.parametrize(
    ("typed", "closest"),
    [
        ("--text-colum", "--text-column"),
        ("--text_column", "--text-column"),
        ("--text-colum=body", "--text-column"),
        ("--tokeniser", "--tokenizer"),
        ("--sorce", "--source"),
        ("--resum", "--resume"),
        ("--refesh", "--refresh"),
        ("--completely-different", None),
        ("--x", None),
    ],
)
def test_closest_option(typed: str, closest: str | None) -> None:
    assert closest_option(typed, OPTIONS) == closest
