"""The real entry points as real subprocesses: ``python scripts/prepare.py`` and the
installed ``prep`` console command."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import PREPARE, dir_bytes, run_prepare_subprocess

from .helpers import is_empty, is_val, manifest

PREP = Path(sys.executable).parent / "prep"  # installed beside this venv's python


def _prep(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PREP), *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, check=False)


@pytest.fixture(scope="module")
def sample_counts() -> dict[str, tuple[int, int]]:
    """(tokens, docs) per split of the bundled sample, recomputed from its Parquet files
    with the default recipe: byte tokenizer, no separator, seed 1337, val fraction 0.01."""
    import prep

    rows = [t for p in sorted((Path(prep.__file__).parent / "sample").glob("*.parquet"))
            for t in pq.read_table(p, columns=["text"])["text"].to_pylist()]
    docs = [t for t in rows if not is_empty(t)]
    val = [t for t in docs if is_val(t, 1337, 0.01)]
    train = [t for t in docs if not is_val(t, 1337, 0.01)]
    return {split: (sum(len(t.encode()) for t in d), len(d))
            for split, d in (("train", train), ("val", val))}


def test_prepare_script_on_the_bundled_sample(tmp_path: Path, sample_counts) -> None:
    assert PREP.is_file(), f"the prep console script is not installed at {PREP}"
    out = tmp_path / "sample-tokens"

    p = run_prepare_subprocess(["--source", "sample", "--tokenizer", "byte", "--out", out])

    assert p.returncode == 0, p.stderr
    summary = [line for line in p.stderr.splitlines() if line.startswith("published")]
    assert len(summary) == 1, p.stderr
    (tokens, docs), (vtokens, vdocs) = sample_counts["train"], sample_counts["val"]
    assert f"published {out}: train {tokens:,} tokens / {docs:,} docs / 1 files; " \
           f"val {vtokens:,} tokens / {vdocs:,} docs / 1 files" in summary[0]
    assert sorted(x.name for x in out.iterdir()) == [
        "_MANIFEST.json", "_PROVENANCE.json", "train-00000.bin", "val-00000.bin"]
    assert not (tmp_path / "sample-tokens.incomplete").exists()

    v = _prep("verify", out)

    assert v.returncode == 0, v.stdout + v.stderr
    assert v.stdout.strip() == f"{out}: OK"

    i = _prep("inspect", out)

    assert i.returncode == 0, i.stderr
    assert f"train: {tokens:,} tokens, {docs:,} docs, 1 files" in i.stdout


def test_prep_prepare_is_the_same_as_the_script(tmp_path: Path) -> None:
    """Run concurrently: the script with an absolute --out, the console command with a
    relative --out in another working directory, --quiet (the summary line only)."""
    (tmp_path / "cwd").mkdir()
    script_out = tmp_path / "script" / "tokens"
    with ThreadPoolExecutor(max_workers=2) as pool:
        script = pool.submit(run_prepare_subprocess, ["--source", "sample", "--tokenizer", "byte",
                                                      "--out", script_out, "--dataset", "s"])
        command = pool.submit(_prep, "prepare", "--source", "sample", "--tokenizer", "byte",
                              "--out", "rel/tokens", "--dataset", "s",
                              "--quiet", cwd=tmp_path / "cwd")
        ps, pc = script.result(), command.result()

    assert ps.returncode == 0, ps.stderr
    assert pc.returncode == 0, pc.stderr
    command_out = tmp_path / "cwd" / "rel" / "tokens"
    assert dir_bytes(command_out) == dir_bytes(script_out)
    lines = pc.stderr.splitlines()
    # --quiet: the summary alone, with the date and time (a cron log's only line)
    assert len(lines) == 1, pc.stderr
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d prep: "
    assert re.match(stamp + re.escape(f"published {command_out}:"), lines[0]), pc.stderr
    assert manifest(command_out)["dataset"] == "s"


def test_usage_and_help() -> None:
    bare = _prep()
    helped = _prep("--help")
    unknown = _prep("frobnicate")
    script_help = subprocess.run([sys.executable, str(PREPARE), "--help"],
                                 capture_output=True, text=True, timeout=60, check=False)

    assert bare.returncode == 2
    assert unknown.returncode == 2
    for sub in ("prepare", "verify", "inspect"):
        assert re.search(rf"\b{sub}\b", bare.stderr), bare.stderr
    assert helped.returncode == 0
    assert script_help.returncode == 0
    assert "--out" in script_help.stdout and "--resume" in script_help.stdout
