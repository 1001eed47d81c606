"""``python -m prep`` as a real subprocess: the same command as the installed ``prep``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import dir_bytes, make_corpus, numbered_docs

PREP = Path(sys.executable).parent / "prep"  # the console script, the reference


def _run(
    head: list[str], *args: object, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*head, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


def _module(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "prep"], *args, cwd=cwd)


def test_help_and_usage_match_the_prep_command(tmp_path: Path) -> None:
    for args, code in ((["--help"], 0), ([], 2), (["frobnicate"], 2)):
        mod, cmd = _module(*args, cwd=tmp_path), _run([str(PREP)], *args, cwd=tmp_path)
        assert (mod.returncode, mod.stdout, mod.stderr) == (code, cmd.stdout, cmd.stderr)
        shown = mod.stdout if code == 0 else mod.stderr  # --help to stdout (issue 11)
        assert "prepare" in shown and "verify" in shown and "inspect" in shown
    sub = _module("prepare", "--help")
    assert sub.returncode == 0
    assert "usage: prep prepare" in sub.stdout and "--resume" in sub.stdout


def test_prepare_verify_and_inspect_through_the_module(tmp_path: Path) -> None:
    src = make_corpus(tmp_path / "src", [numbered_docs(60), numbered_docs(60, 60)])
    out, ref = tmp_path / "out", tmp_path / "ref"
    common = ("--source", src, "--dataset", "m", "--val-fraction", "0.2")
    made = _module("prepare", "--tokenizer", "byte", "--out", out, *common)
    assert made.returncode == 0, made.stderr
    assert f"published {out}" in made.stderr
    assert _run([str(PREP)], "prepare", "--tokenizer", "byte",
                "--out", ref, *common).returncode == 0
    assert dir_bytes(out) == dir_bytes(ref)

    ok = _module("verify", out)
    assert (ok.returncode, ok.stdout.strip()) == (0, f"{out}: OK")
    shown = _module("inspect", out / "train-00000.bin")
    assert shown.returncode == 0 and "train-00000.bin" in shown.stdout

    data = bytearray((out / "train-00000.bin").read_bytes())
    data[-1] ^= 0xFF  # one id changed: the manifest's SHA-256 no longer matches
    (out / "train-00000.bin").write_bytes(bytes(data))
    bad = _module("verify", out)
    assert bad.returncode == 1
    assert "FAIL" in bad.stdout and "train-00000.bin" in bad.stdout
