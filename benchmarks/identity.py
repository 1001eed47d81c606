"""Prove a change altered no byte: prepare the same corpus with this checkout and with a
reference commit, for several recipes, and compare every ``.bin`` file and
``_MANIFEST.json``.

The reference is checked out with ``git worktree`` into a temporary directory and run with
``PYTHONPATH`` pointing at its ``src/`` (which takes precedence over the editable install),
so both versions run with the same interpreter and packages.

    python benchmarks/identity.py [--ref REV] [--mb 200] [--workdir DIR] [--batch-size N]
                                  [--recipes gpt2,shuffled,byte,hub,refresh]

Recipes (each run by both versions, in the same way):

- ``gpt2``: the GPT-2 tokenizer, 20M-token files (the default recipe);
- ``shuffled``: file shuffle, a 4,096-document shuffle buffer, val fraction 0.05,
  separators appended, 3M-token files;
- ``byte``: the byte tokenizer with separator 0 and ``--max-documents``;
- ``hub``: the corpus and the tokenizer served by a loopback Hugging Face Hub
  (``tests/hub/fakehub.py``) and read through the real ``huggingface_hub`` client, each
  version with its own empty cache;
- ``refresh``: publish the corpus, add a file (a link to the first one, under a new name),
  then ``--refresh`` (the rebuilt and swapped-in version is compared).

Default reference: the commit before the throughput work (three-stage pipeline, chunked
tokenizer calls). Prints one JSON line per recipe {"bench": "identity", "recipe", "ref",
"files", "identical", "differences"}; exit 0 when every recipe is identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, REPO, prepare_command, reusable_corpus

PRE_OPTIMIZATION = "dad62f2bbc42d9de8833e21547c4dd396853f328"
RECIPES = ("gpt2", "shuffled", "byte", "hub", "refresh")
HUB_DATASET = "bench/corpus"
HUB_TOKENIZER = "bench/gpt2"


class Version:
    """One checkout, run as ``scripts/prepare.py`` with its own ``src/`` first."""

    def __init__(self, checkout: Path, work: Path, tag: str, batch: int | None) -> None:
        self.checkout, self.work, self.tag, self.batch = checkout, work, tag, batch

    def prepare(
        self,
        source: str | Path,
        tok: str | Path,
        out: Path,
        *extra: str,
        env: dict[str, str] | None = None,
    ) -> None:
        cmd = prepare_command(
            Path(source),
            tok,
            out,
            "--dataset",
            "identity",
            "--quiet",
            *extra,
            script=self.checkout / "scripts" / "prepare.py",
        )
        cmd[cmd.index("--source") + 1] = str(source)  # an hf:// URI stays as it is
        if self.batch:
            cmd += ["--batch-size", str(self.batch)]
        full = {**os.environ, "PYTHONPATH": str(self.checkout / "src"), **(env or {})}
        subprocess.run(cmd, check=True, env=full, cwd=self.checkout)

    def out(self, recipe: str) -> Path:
        out = self.work / f"out-{recipe}-{self.tag}"
        shutil.rmtree(out, ignore_errors=True)
        return out


def run_gpt2(v: Version, corpus: Path, tok: Path, hub: Any) -> Path:
    out = v.out("gpt2")
    v.prepare(corpus, tok, out, "--max-file-tokens", "20000000")
    return out


def run_shuffled(v: Version, corpus: Path, tok: Path, hub: Any) -> Path:
    out = v.out("shuffled")
    v.prepare(
        corpus,
        tok,
        out,
        "--shuffle-files",
        "--shuffle-buffer",
        "4096",
        "--val-fraction",
        "0.05",
        "--sep-position",
        "append",
        "--max-file-tokens",
        "3000000",
    )
    return out


def run_byte(v: Version, corpus: Path, tok: Path, hub: Any) -> Path:
    out = v.out("byte")
    v.prepare(
        corpus,
        "byte",
        out,
        "--doc-sep-id",
        "0",
        "--max-documents",
        "20000",
        "--max-file-tokens",
        "5000000",
    )
    return out


def run_hub(v: Version, corpus: Path, tok: Path, hub: Any) -> Path:
    out = v.out("hub")
    cache = v.work / f"hf-cache-{v.tag}"
    shutil.rmtree(cache, ignore_errors=True)
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache), "HF_HUB_DISABLE_TELEMETRY": "1"}
    v.prepare(
        f"hf://datasets/{HUB_DATASET}",
        f"hf:{HUB_TOKENIZER}",
        out,
        "--max-file-tokens",
        "20000000",
        env=env,
    )
    return out


def run_refresh(v: Version, corpus: Path, tok: Path, hub: Any) -> Path:
    out = v.out("refresh")
    shutil.rmtree(out.with_name(out.name + ".previous"), ignore_errors=True)
    src = v.work / "refresh-src"  # one path for both versions: the manifest records it
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    parts = sorted(corpus.glob("*.parquet"))
    for p in parts:
        os.link(p, src / p.name)
    v.prepare(src, tok, out, "--max-file-tokens", "20000000")
    os.link(parts[0], src / "zz-added.parquet")  # a new file: the refresh rebuilds and swaps
    v.prepare(src, tok, out, "--max-file-tokens", "20000000", "--refresh")
    return out


RUNNERS: dict[str, Callable[[Version, Path, Path, Any], Path]] = {
    "gpt2": run_gpt2,
    "shuffled": run_shuffled,
    "byte": run_byte,
    "hub": run_hub,
    "refresh": run_refresh,
}


def start_hub(corpus: Path, tok: Path) -> Any:
    """A loopback Hub serving the corpus (LFS files) and the GPT-2 tokenizer."""
    sys.path.insert(0, str(REPO / "tests" / "hub"))
    from fakehub import FakeHub

    hub = FakeHub(page_size=100).start()
    hub.commit("dataset", HUB_DATASET, {p.name: p.read_bytes() for p in corpus.glob("*.parquet")})
    tok_dir = tok.parent if tok.is_file() else tok
    files = {
        n: (tok_dir / n).read_bytes()
        for n in ("tokenizer.json", "generation_config.json")
        if (tok_dir / n).is_file()
    }
    hub.commit("model", HUB_TOKENIZER, files)
    return hub


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
    p.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated")
    p.add_argument("--workdir", type=Path, default=None, help="kept; the corpus is reused")
    args = p.parse_args(argv)
    recipes = [r for r in args.recipes.split(",") if r]
    unknown = set(recipes) - set(RUNNERS)
    if unknown:
        p.error(f"unknown recipes {sorted(unknown)}; choose from {', '.join(RECIPES)}")
    work, corpus = reusable_corpus(args.workdir, args.mb, "prep-identity-")
    ref = Path(tempfile.mkdtemp(prefix="prep-ref-")) / "ref"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(ref), args.ref],
        check=True,
        capture_output=True,
    )
    hub = start_hub(corpus, args.tokenizer) if "hub" in recipes else None
    ok = True
    try:
        versions = (
            Version(ref, work, "ref", args.batch_size),
            Version(REPO, work, "now", args.batch_size),
        )
        for recipe in recipes:
            a, b = (outputs(RUNNERS[recipe](v, corpus, args.tokenizer, hub)) for v in versions)
            diffs = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
            ok = ok and not diffs
            print(
                json.dumps(
                    {
                        "bench": "identity",
                        "recipe": recipe,
                        "ref": args.ref,
                        "corpus_mb": args.mb,
                        "files": len(b),
                        "identical": not diffs,
                        "differences": diffs,
                    }
                ),
                flush=True,
            )
        return 0 if ok else 1
    finally:
        if hub is not None:
            hub.stop()
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(ref)],
            check=False,
            capture_output=True,
        )
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
