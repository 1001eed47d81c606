"""The prepare command's grammar: six groups, help for every option, defaults shown in a
spelling the parser reads back as the real default, examples that parse, the exit codes,
no abbreviations, and short usage errors with the closest option."""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
from typing import Any

import pytest

from prep.cli.options import GROUPS, command_error, prepare_parser
from prep.encoders.engine import CHOICES as ENGINES
from prep.executors import EXECUTORS
from prep.formats import DTYPES, FORMAT_NAMES
from prep.recipe import Recipe, RunOptions

PROG = "prep prepare"


def defaults() -> dict[str, Any]:
    """Every field default of the recipe and the run options (the real ones, not the
    help's)."""
    out: dict[str, Any] = {}
    for cls in (Recipe, RunOptions):
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
    return out


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    choices = {"format": FORMAT_NAMES, "dtype": DTYPES, "executor": EXECUTORS,
               "engine": ENGINES}
    return prepare_parser(PROG, defaults(), "9.9.9", choices)


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "version")]


def test_every_option_is_in_one_of_the_six_groups_in_order(parser: argparse.ArgumentParser
                                                           ) -> None:
    groups = {g.title: g for g in parser._action_groups}
    assert [t for t in groups if t in GROUPS] == list(GROUPS)
    assert GROUPS == ("source", "tokenizer and separator", "splits and order", "output",
                      "run control", "Hub")
    grouped = {a.dest for t in GROUPS for a in groups[t]._group_actions}
    assert {a.dest for a in options(parser)} == grouped
    assert len(options(parser)) >= 27
    help_text = parser.format_help()
    positions = [help_text.index(f"\n{title}:\n") for title in GROUPS]
    assert positions == sorted(positions)


def test_every_option_has_help(parser: argparse.ArgumentParser) -> None:
    for a in options(parser):
        assert a.help and a.help != argparse.SUPPRESS and len(a.help) > 10, a.option_strings


def test_shown_defaults_parse_back_to_the_real_defaults(parser: argparse.ArgumentParser
                                                        ) -> None:
    real = defaults()
    checked = []
    for a in options(parser):
        if a.nargs == 0 or real.get(a.dest) is None or "required" in (a.help or ""):
            continue  # a flag, no default, or an option a fresh run must be given
        m = re.search(r"\(default: ([^:;)]+)", a.help or "")
        assert m, f"{a.option_strings[0]} does not show its default {real[a.dest]!r}"
        ns = parser.parse_args(["--out", "x", a.option_strings[0], m[1]])
        assert getattr(ns, a.dest) == real[a.dest], (a.option_strings[0], m[1])
        checked.append(a.dest)
    assert {"max_file_tokens", "val_fraction", "seed", "batch_size", "checkpoint_interval",
            "log_interval", "wait_lock", "sep_position", "text_column"} <= set(checked)
    assert "(default: 100M)" in parser.format_help()


def example_commands(parser: argparse.ArgumentParser) -> list[list[str]]:
    text = (parser.epilog or "").replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(PROG)]
    return [shlex.split(line)[len(PROG.split()):] for line in lines]


def test_examples_parse_and_cover_the_five_cases(parser: argparse.ArgumentParser) -> None:
    examples = example_commands(parser)
    assert len(examples) == 4
    parsed = [vars(parser.parse_args(args)) for args in examples]
    local = [p for p in parsed if "source" in p and "://" not in p["source"]
             and not p["tokenizer"].startswith("hf:")]
    assert local
    assert any(p.get("source", "").startswith("hf://datasets/") for p in parsed)
    assert any(p.get("tokenizer", "").startswith("hf:") and "://" not in p["tokenizer"]
               for p in parsed)
    assert any(p.get("resume") and set(p) == {"out", "resume"} for p in parsed)
    assert any(p.get("refresh") for p in parsed)


def test_help_ends_with_the_exit_codes(parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    codes = text[text.index("\nexit codes:\n"):]
    assert text.rstrip().endswith(codes.rstrip())
    assert re.findall(r"^  (\d+) ", codes, re.M) == ["0", "1", "2", "75", "130"]
    assert text.index("\nexamples:\n") < text.index("\nexit codes:\n")


@pytest.mark.parametrize(
    ("value", "parsed"),
    [("1e6", 1_000_000), ("100_000_000", 100_000_000), ("100M", 100_000_000),
     ("2500", 2500)],
)
def test_counts_in_every_spelling(parser: argparse.ArgumentParser, value: str, parsed: int
                                  ) -> None:
    ns = parser.parse_args(["--out", "x", "--max-file-tokens", value, "--train-tokens", value])
    assert (ns.max_file_tokens, ns.train_tokens) == (parsed, parsed)


def usage_error(parser: argparse.ArgumentParser, args: list[str],
                capsys: pytest.CaptureFixture[str]) -> list[str]:
    with pytest.raises(SystemExit) as e:
        parser.parse_args(args)
    assert e.value.code == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    return cap.err.splitlines()


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["--out", "x", "--text-colum", "body"],
         "prep prepare: error: unknown option --text-colum; did you mean --text-column?"),
        (["--out", "x", "--text-colum=body"],
         "prep prepare: error: unknown option --text-colum; did you mean --text-column?"),
        (["--out", "x", "--tokeniser", "byte"],
         "prep prepare: error: unknown option --tokeniser; did you mean --tokenizer?"),
        (["--out", "x", "--out-of-this-world"],
         "prep prepare: error: unknown option --out-of-this-world"),
        (["--out", "x", "stray"], "prep prepare: error: unexpected argument 'stray'"),
        (["--source", "s"], "prep prepare: error: the following arguments are required: --out"),
        (["--out", "x", "--max-file-tokens", "lots"],
         "prep prepare: error: argument --max-file-tokens: 'lots' is not a whole number; "
         "write it as 100000000, 100_000_000, 1e8 or 100M"),
        (["--out", "x", "--batch-size", "0"],
         "prep prepare: error: argument --batch-size: '0' is too small; give a number >= 1"),
        (["--out", "x", "--val-fraction", "1"],
         "prep prepare: error: argument --val-fraction: 1 must be in [0, 1): 0 <= F < 1"),
        (["--out", "x", "--checkpoint-interval", "0"],
         "prep prepare: error: argument --checkpoint-interval: 0 must be > 0"),
        (["--out", "x", "--doc-sep-id", "1", "--no-doc-sep"],
         "prep prepare: error: argument --no-doc-sep: not allowed with argument --doc-sep-id"),
    ],
)
def test_usage_errors_are_two_short_lines(parser: argparse.ArgumentParser, args: list[str],
                                          first_line: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    lines = usage_error(parser, args, capsys)
    assert lines == [first_line, "(see prep prepare --help)"]


def test_no_prefix_is_taken_for_an_option(parser: argparse.ArgumentParser,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    for prefix in ("--text-colum", "--tok", "--res", "--max-file"):
        usage_error(parser, ["--out", "x", prefix, "1"], capsys)


def test_unknown_command() -> None:
    assert command_error("prep", "prepar", ["prepare", "verify", "inspect"]) == (
        "prep: error: unknown command 'prepar'; did you mean prepare?\n"
        "(commands: prepare, verify, inspect; see prep --help)")
    assert "did you mean" not in command_error("prep", "zzz", ["prepare", "verify"])



def test_the_options_prepare_and_train_tokenizer_share_parse_alike(
        parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    """One definition (``cli.options.SHARED``) behind both commands: the same spellings
    parse to the same settings, and the same bad value is refused in the same words."""
    from prep.cli.options import SHARED
    from prep.cli.train import parser as train_parser

    train = train_parser()
    typed = ["--workers", "2K", "--batch-size", "1e3", "--checkpoint-interval", "1.5",
             "--resume", "--wait-lock", "0", "--log-interval", "7", "--quiet", "--offline",
             "--token", "hf_x"]
    got = {k: v for k, v in vars(train.parse_args(["--out", "d", *typed])).items() if k != "out"}
    want = {k: v for k, v in vars(parser.parse_args(["--out", "d", *typed])).items()
            if k != "out"}
    assert got == want and got["workers"] == 2000 and got["checkpoint_interval"] == 1.5
    assert {"--" + k.replace("_", "-") for k in got} == set(SHARED)
    refusals = []
    for p in (parser, train):
        with pytest.raises(SystemExit):
            p.parse_args(["--out", "d", "--wait-lock", "-1"])
        refusals.append(capsys.readouterr().err.split("error: ", 1)[1])
    assert refusals[0] == refusals[1].replace("prep train-tokenizer", PROG)
    assert refusals[0].startswith("argument --wait-lock: -1 must be >= 0")
