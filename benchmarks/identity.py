"""Prove an optimization changed no byte: prepare the same corpus with this checkout and
with a reference commit, and compare every ``.bin`` file and ``_MANIFEST.json``.

The reference is checked out with ``git worktree`` into a temporary directory and run with
``PYTHONPATH`` pointing at its ``src/`` (which takes precedence over the editable install),
so both versions run with the same interpreter and packages.

    python benchmarks/identity.py [--ref REV] [--mb 200] [--workdir DIR] [--batch-size N]

Default reference: the commit before the throughput work (three-stage pipeline, chunked
tokenizer calls). Prints one JSON line {"bench": "identity", "ref", "files", "identical",
"differences"}; exit 0 when identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, REPO, prepare_command, reusable_corpus

PRE_OPTIMIZATION = "dad62f2bbc42d9de8833e21547c4dd396853f328"


def prepare(checkout: Path, corpus: Path, tok: Path, out: Path, batch: int | None) -> None:
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    cmd = prepare_command(
        corpus,
        tok,
        out,
        "--dataset",
        "identity",
        "--quiet",
        "--max-file-tokens",
        "20000000",
        script=checkout / "scripts" / "prepare.py",
    )
    if batch:
        cmd += ["--batch-size", str(batch)]
    subprocess.run(cmd, check=True, env=env, cwd=checkout)


def outputs(out: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(out.iterdir())
        if p.suffix == ".bin" or p.name == "_MANIFEST.json"
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="byte-identity against a reference commit")
    p.add_argument("--ref", default=PRE_OPTIMIZATION)
    p.add_argument("--mb", type=float, default=200.0)
    p.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--workdir", type=Path, default=None, help="kept; the corpus is reused")
    args = p.parse_args(argv)
    work, corpus = reusable_corpus(args.workdir, args.mb, "prep-identity-")
    ref = Path(tempfile.mkdtemp(prefix="prep-ref-")) / "ref"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(ref), args.ref],
        check=True,
        capture_output=True,
    )
    try:
        for name in ("out-ref", "out-now"):
            shutil.rmtree(work / name, ignore_errors=True)
        prepare(ref, corpus, args.tokenizer, work / "out-ref", args.batch_size)
        prepare(REPO, corpus, args.tokenizer, work / "out-now", args.batch_size)
        a, b = outputs(work / "out-ref"), outputs(work / "out-now")
        diffs = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
        print(
            json.dumps(
                {
                    "bench": "identity",
                    "ref": args.ref,
                    "corpus_mb": args.mb,
                    "files": len(b),
                    "identical": not diffs,
                    "differences": diffs,
                }
            )
        )
        return 0 if not diffs else 1
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(ref)],
            check=False,
            capture_output=True,
        )
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
