"""Helpers for the Hub tests: the corpus, runners for ``scripts/prepare.py`` pointed at the
loopback Hub, and comparisons with the same corpus read locally.

``huggingface_hub`` reads ``HF_ENDPOINT`` and ``HF_HUB_CACHE`` once, at import, so the CLI
runs in subprocesses with them in the environment; in-process tests pass ``HubOptions``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from conftest import GPT2_DIR, PREPARE, dir_bytes, numbered_docs

from .fakehub import FakeHub

DATASET = "acme/corpus"
URI = f"hf://datasets/{DATASET}"
TOKENIZER_REPO = "acme/gpt2-tokenizer"
SETTINGS = ("--dataset", "corpus", "--val-fraction", "0.1")
COMMON = (*SETTINGS, "--tokenizer", "byte")  # the byte tokenizer, named explicitly

# A retry policy for subprocesses: the module constants, patched before the CLI runs.
FAST_RETRY = (
    "import sys, prep.hub.calls as h; h.RETRY_ATTEMPTS = 3; h.RETRY_BASE_DELAY = 0.01\n"
    "from prep.cli.commands import run_prepare; sys.exit(run_prepare(sys.argv[1:]))"
)


def parquet_bytes(texts: Sequence[str]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"text": list(texts)}), buf, row_group_size=50)
    return buf.getvalue()


def _docs(start: int, n: int) -> list[str]:
    docs = numbered_docs(n, start)
    docs[7] = "   "  # an empty row: visited, skipped
    return docs


# Sorted read order: data/extra/part-0, data/train-00000, data/train-00001 (docs/format.md, step 1).
CORPUS: dict[str, bytes] = {
    "data/train-00000.parquet": parquet_bytes(_docs(0, 120)),
    "data/train-00001.parquet": parquet_bytes(_docs(120, 120)),
    "data/extra/part-0.parquet": parquet_bytes(_docs(240, 120)),
}
ORDER = sorted(CORPUS)
GIT_FILE = "data/train-00001.parquet"  # stored in git, not LFS: no SHA-256 in the listing
EXTRAS = {"README.md": b"# corpus\n", ".gitattributes": b"*.parquet filter=lfs\n"}


def tokenizer_files() -> dict[str, bytes]:
    return {
        name: (GPT2_DIR / name).read_bytes()
        for name in ("tokenizer.json", "generation_config.json")
    }


def write_local(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def hub_env(hub: FakeHub, home: Path, **extra: str) -> dict[str, str]:
    """The environment without the caller's Hugging Face settings, pointed at ``hub``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    env.update(
        {
            "HF_ENDPOINT": hub.url,
            "HF_HOME": str(home),
            "HF_HUB_CACHE": str(home / "hub"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    env.update(extra)
    return env


def prepare(
    args: Sequence[object],
    env: dict[str, str] | None = None,
    fast_retry: bool = False,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``python scripts/prepare.py ARGS`` (or the same CLI with FAST_RETRY)."""
    head = ["-c", FAST_RETRY] if fast_retry else [str(PREPARE)]
    return subprocess.run(
        [sys.executable, *head, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def spawn(args: Sequence[object], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PREPARE), *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(
    predicate: Callable[[], object], proc: subprocess.Popen[str] | None = None, timeout: float = 30
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"the run ended early ({proc.returncode}): {proc.communicate()[1][-2000:]}"
            )
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def rows_committed(out: Path) -> int:
    try:
        cp = json.loads((out.parent / f"{out.name}.incomplete" / "checkpoint.json").read_text())
    except (OSError, ValueError):
        return 0
    return int(cp["progress"]["rows_visited"])


def manifest(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "_MANIFEST.json").read_text())
    return data


def bins(out: Path) -> dict[str, bytes]:
    return {k: v for k, v in dir_bytes(out).items() if k.endswith(".bin")}


def assert_same_dataset(hub_out: Path, local_out: Path, *, revision: str) -> None:
    """Byte-identical .bin files; manifests equal but for the source's kind, URI and
    revision (and so the corpus hash, which covers kind and revision), and the local files'
    fingerprints (a Hub file has none: its commit pins it)."""
    assert bins(hub_out) == bins(local_out)
    assert bins(hub_out)  # never vacuous
    mh, ml = manifest(hub_out), manifest(local_out)
    assert (mh["source"]["kind"], mh["source"]["revision"]) == ("hf", revision)
    assert (ml["source"]["kind"], ml["source"]["revision"]) == ("parquet", None)
    assert not any("fingerprint" in f for f in mh["source"]["files"])
    assert all("fingerprint" in f for f in ml["source"]["files"])

    def strip(m: dict[str, Any]) -> dict[str, Any]:
        src = {k: v for k, v in m["source"].items() if k not in ("kind", "uri", "revision")}
        src["files"] = [{k: v for k, v in f.items() if k != "fingerprint"} for f in src["files"]]
        return {**m, "source": src, "corpus_manifest_sha256": None}

    assert strip(mh) == strip(ml)
    assert mh["totals"] == ml["totals"]
