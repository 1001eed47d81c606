"""The requests a publish to the Hub makes, counted by endpoint on the loopback Hub: a
1,000-shard dataset published whole, then another killed while its 500th shard uploads and
resumed on another machine (another --staging, an empty cache).

Run from the repository's root: ``PYTHONPATH=src:tests python -m hub.request_budget
[SHARDS]``. It prints the commits (files changed in each) and the requests by endpoint of
each run. Not a test: the numbers depend on how the run's commits fall (a commit every
COMMIT_FILES sealed files, or COMMIT_SECONDS after the last). Listings come 1,000 entries a
page, as the Hub's tree endpoint pages them."""

from __future__ import annotations

import hashlib
import signal
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .fakehub import FakeHub
from .publish import OUT, OUT_REPO, argv, env_for, new_repo


def corpus(root: Path, shards: int, word: str) -> Path:
    """``shards`` documents of about 130 bytes: one a shard with ``--max-file-tokens 200``."""
    src = root / word
    src.mkdir()
    texts = [f"{i:06d} " + f"{word} " * (120 // (len(word) + 1)) for i in range(shards)]
    pq.write_table(pa.table({"text": texts}), src / "part-0.parquet", row_group_size=64)
    return src


def report(hub: FakeHub, title: str, since: int) -> None:
    repo = hub.repos[("dataset", OUT_REPO)]
    history = hub.history(OUT_REPO)[since:]
    sizes = []
    prev = repo.commits[hub.history(OUT_REPO)[since - 1]] if since else {}
    for c in history:
        files = repo.commits[c]
        changed = sum(1 for p in set(files) | set(prev) if files.get(p) != prev.get(p))
        sizes.append(changed)
        prev = files
    print(f"\n{title}: {len(history)} commits; files changed in each: {sizes}")
    for key, n in sorted(hub.counts().items()):
        print(f"  {key:28s} {n:6,}")


def main(shards: int) -> None:
    import subprocess

    with tempfile.TemporaryDirectory() as tmp, FakeHub(page_size=1000) as hub:
        root = Path(tmp)
        common = ("--tokenizer", "byte", "--max-file-tokens", "200", "--val-fraction", "0")
        args = ("--source", corpus(root, shards, "alpha"), *common)
        new_repo(hub)
        r = subprocess.run(argv(60, *args, "--out", f"{OUT}/whole", "--staging", root / "w"),
                           env=env_for(hub, root / "hf-w"), capture_output=True, text=True,
                           check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        report(hub, f"publish of {shards:,} shards", 1)

        # Another corpus of as many shards, killed while its 500th shard uploads: its bytes
        # are known from a local run of it.
        args = ("--source", corpus(root, shards, "beta"), *common)
        r = subprocess.run([sys.executable, "-m", "prep", "prepare", *map(str, args), "--out",
                            str(root / "local")], capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        target = (root / "local" / f"train-{shards // 2 - 1:05d}.bin").read_bytes()
        start = len(hub.history(OUT_REPO))
        arrived, release = hub.hold(f"/{hashlib.sha256(target).hexdigest()}/", "PUT")
        hub.clear_log()
        proc = subprocess.Popen(argv(60, *args, "--out", f"{OUT}/killed", "--staging",
                                     root / "a"), env=env_for(hub, root / "hf-a"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not arrived.wait(0.05):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        release.set()
        report(hub, f"the run killed while shard {shards // 2} uploads", start)
        start = len(hub.history(OUT_REPO))
        hub.clear_log()
        r = subprocess.run(argv(60, *args, "--out", f"{OUT}/killed", "--staging", root / "b",
                                "--resume"), env=env_for(hub, root / "hf-b"),
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        report(hub, "its resume on another machine", start)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
