"""One rule for exit codes 2 and 1, stated in --help: 2 when the command line alone is
wrong (no file or network needed to see it), 1 when a well-formed value names something
that does not work. Every case runs as a real process; none leaves a ``DIR.lock``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GPT2_DIR, PREPARE

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "prep" / "sample"
OK_SOURCE = str(SAMPLE / "part-00000.parquet")

# (the arguments besides --out, the exit code, words of the one-line message)
USAGE = [
    (["--source", OK_SOURCE, "--tokenizer", "hf://openai-community/gpt2"], 2,
     "did you mean --tokenizer hf:openai-community/gpt2?"),
    (["--source", OK_SOURCE, "--tokenizer", "hf:"], 2, "expected hf:OWNER/NAME[@REVISION]"),
    (["--source", "hf:owner/name", "--tokenizer", "byte"], 2,
     "did you mean --source hf://datasets/owner/name?"),
    (["--source", "hf://models/owner/name", "--tokenizer", "byte"], 2,
     "only dataset repositories are used on the Hub"),
    (["--source", OK_SOURCE, "--tokenizer", "byte", "--text-colum", "text"], 2,
     "did you mean --text-column?"),
    (["--source", OK_SOURCE, "--tokenizer", "byte", "--max-file-tokens", "lots"], 2,
     "is not a whole number"),
    (["--source", OK_SOURCE, "--tokenizer", "byte", "--val-fraction", "2"], 2,
     "must be in [0, 1)"),
    # a worker count gets a worker count's hint, not a token count's 100M
    (["--source", OK_SOURCE, "--tokenizer", "byte", "--workers", "two"], 2,
     "argument --workers: 'two' is not a whole number; write it as digits, such as 4"),
]
INPUT = [
    (["--source", OK_SOURCE, "--tokenizer", "./no-such-tokenizer/"], 1,
     "no such file or directory"),
    (["--source", OK_SOURCE, "--tokenizer", str(GPT2_DIR / "generation_config.json")], 1,
     "this is the generation configuration, not the tokenizer"),
    (["--source", "./no-such-dir/", "--tokenizer", "byte"], 1, "no such file or directory"),
    (["--source", str(GPT2_DIR), "--tokenizer", "byte"], 1,
     "the directory holds no Parquet, Arrow or JSON Lines files (searched recursively"),
    # seeing it needs the tokenizer opened (its vocabulary size): 1, not 2
    (["--source", OK_SOURCE, "--tokenizer", "byte", "--doc-sep-id", "99999"], 1,
     "--doc-sep-id 99,999 is outside the vocabulary of byte (size 256); choose an id below "
     "256 or pass --no-doc-sep"),
    (["--source", "./no-such-dir/", "--tokenizer", "byte"], 1,
     "s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, or `sample`"),  # every scheme named
]


@pytest.mark.parametrize(("args", "code", "words"), USAGE + INPUT)
def test_the_rule_and_no_lock_left(tmp_path: Path, args: list[str], code: int, words: str
                                   ) -> None:
    out = tmp_path / "ds"
    r = subprocess.run([sys.executable, str(PREPARE), *args, "--out", str(out)],
                       capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert words in lines[0], r.stderr
    if code == 2:
        assert len(lines) <= 2, r.stderr  # never the whole usage block
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a refused run left files"


def test_a_model_directory_as_source_gets_no_conversion_hint(tmp_path: Path) -> None:
    """Its JSON files are configs, not data: no pyarrow one-liner for them."""
    r = subprocess.run([sys.executable, str(PREPARE), "--source", str(GPT2_DIR), "--tokenizer",
                        "byte", "--out", str(tmp_path / "ds")], capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"prep: error: --source {GPT2_DIR}: the directory holds no Parquet, Arrow or JSON Lines "
        "files (searched recursively for *.parquet, *.arrow, *.jsonl, and *.jsonl.gz, "
        "*.jsonl.zst and the like); a directory listing leaves plain *.json out "
        "(generation_config.json, tokenizer.json): name JSON Lines files with a glob, "
        f"--source '{GPT2_DIR}/**/*.json'"]


@pytest.mark.parametrize("out", ["/proc/prep-no-such", "/sys/prep-no-such"])
def test_a_lock_file_that_cannot_be_created_is_1_not_75(tmp_path: Path, out: str) -> None:
    """Nobody holds it, so no retry helps: 75 would make a supervisor retry for ever."""
    r = subprocess.run([sys.executable, str(PREPARE), "--source", OK_SOURCE, "--tokenizer",
                        "byte", "--out", out], capture_output=True, text=True, timeout=300,
                       check=False, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert f"prep: error: cannot create the lock file {out}.lock (" in r.stderr
    assert "another run holds" not in r.stderr and "Traceback" not in r.stderr
