"""What the bucket --out tests share: their World (several train rollovers, val documents
throughout the run), the reference bytes of a local run, reading a prefix back, and the
remote checkpoint as the bucket holds it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from harness import Corpus, World, world
from s3server import S3Server

# ~6 train shards and one val shard that stays open from the first row to the last; worker
# processes (copiers among them) write them, as for any source larger than this one.
CORPUS = Corpus(n_docs=3000, n_files=4, max_file_tokens=3000, tokenizer_docs=1500,
                vocab_size=300, dataset="ds", workers=2)
SHARDS = (".bin", ".idx")


def bucket_world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """The session's World for bucket outputs, with its local reference run."""
    return world(tmp_path_factory, CORPUS)


def new_uri(bucket: str, name: str = "ds") -> str:
    """``s3://BUCKET/<unique>/NAME``: an output no other test writes."""
    return f"s3://{bucket}/out-{uuid.uuid4().hex[:8]}/{name}"


def objects(server: S3Server, uri: str) -> dict[str, bytes]:
    """Every object under ``uri/`` by name below it (nothing for an empty prefix)."""
    fs = server.filesystem()
    root = uri.removeprefix("s3://")
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except FileNotFoundError:
        return {}
    out = {}
    for info in infos:
        if info.type == pafs.FileType.File:
            try:
                with fs.open_input_stream(info.path) as f:
                    out[info.path[len(root) + 1:]] = f.read()
            except FileNotFoundError:
                continue  # deleted since the listing (a running prep replaces its own)
            except OSError as e:  # ... or between the open and the read (GetObject)
                if "NO_SUCH_KEY" not in str(e):
                    raise
                continue
    return out


def dataset_bytes(server: S3Server, uri: str) -> dict[str, bytes]:
    """What ``conftest.dir_bytes`` gives for a local dataset: shards, the manifest and
    every file in a split's folder (datatrove's ``train/``)."""
    return {n: b for n, b in objects(server, uri).items()
            if n.endswith(SHARDS) or n == "_MANIFEST.json" or n.startswith(("train/", "val/"))}


def remote_checkpoint(server: S3Server, uri: str) -> dict[str, Any] | None:
    """The newest remote checkpoint (``checkpoint-SEQ.json``), or None."""
    held = objects(server, uri + ".incomplete")
    names = sorted(n for n in held if n.startswith("checkpoint-") and n.endswith(".json"))
    return dict(json.loads(held[names[-1]])) if names else None


def named_now(server: S3Server, uri: str) -> int:
    """How many sealed shards the remote checkpoint names now (0 when there is none yet, or
    while SeaweedFS replaces it: its filer may show an object being overwritten empty)."""
    try:
        record = remote_checkpoint(server, uri)
    except ValueError:
        return 0
    return 0 if record is None else len(named(record))


def named(record: dict[str, Any]) -> set[str]:
    """The sealed shards a remote checkpoint names."""
    return {r["name"] for s in record["checkpoint"]["splits"].values() for r in s["sealed"]}


def secrets_absent(server: S3Server, stderr: str, *roots: Path) -> None:
    """No secret key in what a run printed or in any file under ``roots``."""
    for secret in (*server.secrets(), server.env()["AWS_ACCESS_KEY_ID"]):
        assert secret not in stderr
        for root in roots:
            for p in root.rglob("*"):
                if p.is_file():
                    assert secret.encode() not in p.read_bytes(), p
