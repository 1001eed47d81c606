"""The help a new user reads and the usage errors they hit, from the installed ``prep``
command and ``scripts/prepare.py`` as real processes: help on stdout with the six groups,
examples and exit codes; ``--version``; no abbreviations; two-line usage errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PREPARE

import prep

PREP = Path(sys.executable).parent / "prep"
GROUPS = ["source", "tokenizer and separator", "splits and order", "output", "run control",
          "Hub"]


def run(*argv: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120,
                          check=False)


@pytest.mark.parametrize("command", [[PREP, "prepare"], [sys.executable, PREPARE]])
def test_prepare_help_has_groups_examples_and_exit_codes(command: list[object]) -> None:
    r = run(*command, "--help")
    assert r.returncode == 0 and r.stderr == ""
    text = r.stdout
    heads = [text.index(f"\n{g}:\n") for g in GROUPS]
    assert heads == sorted(heads), "the groups are not in order"
    options = re.findall(r"^  (--[a-z-]+)", text, re.M)
    assert len(options) >= 27 and "--text-column" in options and "--sep-position" in options
    entry = text[text.index("\n  --sep-position"):]
    entry = entry[:entry.index("\n  --", 2)]
    assert "separator before each document" in " ".join(entry.split())  # it had no help
    examples = text[text.index("\nexamples:\n"):text.index("\nexit codes:\n")]
    for case in ("--source data/", "--source 'hf://datasets/", "--tokenizer hf:", "--resume",
                 "--refresh"):
        assert case in examples, case
    codes = text[text.index("\nexit codes:\n"):]
    assert re.findall(r"^  (\d+) ", codes, re.M) == ["0", "1", "2", "75", "130"]
    assert "(default: 100M)" in text  # a default the parser accepts as written


def test_merge_help_has_options_examples_and_exit_codes() -> None:
    r = run(PREP, "merge", "--help")
    assert r.returncode == 0 and r.stderr == ""
    text = r.stdout
    for option in ("--wait-lock S", "--threads N", "--quiet"):
        assert f"\n  {option}" in text, option
    flat = " ".join(text.split())
    assert "(default: 0: exit 75 at once)" in flat and "(default: all cores)" in flat
    examples = text[text.index("\nexamples:\n"):text.index("\nexit codes:\n")]
    assert "--part 0/3" in examples and "prep merge tokens/ds" in examples
    codes = text[text.index("\nexit codes:\n"):]
    assert re.findall(r"^  (\d+) ", codes, re.M) == ["0", "1", "2", "75", "130"]
    assert "merge" in run(PREP, "--help").stdout


def test_prep_help_and_version_go_to_stdout() -> None:
    helped = run(PREP, "--help")
    assert helped.returncode == 0 and helped.stderr == ""
    assert "prepare" in helped.stdout and "exit codes:" in helped.stdout
    version = run(PREP, "--version")
    assert (version.returncode, version.stdout, version.stderr) == (
        0, f"prep {prep.__version__}\n", "")
    assert run(PREP, "prepare", "--version").stdout == f"prep prepare {prep.__version__}\n"


@pytest.mark.parametrize(("argv", "first"), [
    (["prepare", "--out", "x", "--text-colum", "body"],
     "prep prepare: error: unknown option --text-colum; did you mean --text-column?"),
    (["prepare", "--out", "x", "--max-file-tokens", "1e6x"],
     "prep prepare: error: argument --max-file-tokens: '1e6x' is not a whole number; "
     "write it as 100000000, 100_000_000, 1e8 or 100M"),
    (["prepare", "--source", "s"],
     "prep prepare: error: the following arguments are required: --out"),
    (["prepar", "--out", "x"], "prep: error: unknown command 'prepar'; did you mean prepare?"),
    (["verify"], "prep verify: error: the following arguments are required: DIR"),
    (["merge", "d", "--wait-lok", "3"],
     "prep merge: error: unknown option --wait-lok; did you mean --wait-lock?"),
    (["merge", "d", "--threads", "0"],
     "prep merge: error: argument --threads: '0' is too small; give a number >= 1"),
    (["inspect", "x", "--frist", "3"],
     "prep inspect: error: unknown option --frist; did you mean --first?"),
])
def test_a_usage_error_is_two_lines(argv: list[str], first: str) -> None:
    r = run(PREP, *argv)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and lines[0] == first, r.stderr
    assert "usage:" not in r.stderr


def test_counts_in_any_spelling_reach_the_recipe(tmp_path: Path) -> None:
    """--max-file-tokens 1e6 used to be refused ("not an integer") though the help showed
    (1e8); the manifest records what each spelling means."""
    import json

    src = Path(prep.__file__).parent / "sample" / "part-00000.parquet"
    for spelling, value in (("2e4", 20_000), ("20_000", 20_000), ("20K", 20_000)):
        out = tmp_path / spelling
        r = run(PREP, "prepare", "--source", src, "--tokenizer", "byte", "--out", out,
                "--max-file-tokens", spelling, "--quiet")
        assert r.returncode == 0, r.stderr
        recipe = json.loads((out / "_MANIFEST.json").read_text())["recipe"]
        assert recipe["max_file_tokens"] == value
