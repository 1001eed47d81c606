"""``_MANIFEST.json`` (deterministic: same inputs and recipe, same bytes) and
``_PROVENANCE.json`` (this run's facts that may differ between runs).

The manifest is a plain function of the recipe, the source and tokenizer identities, the
stream's final counts and the sealed files; it holds nothing that varies between runs.
"""

from __future__ import annotations

import hashlib
import json
import platform
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prep.binfile import version_for_vocab
from prep.encoders import TokenizerIdentity
from prep.errors import IntegrityError
from prep.fsio import atomic_write_bytes
from prep.recipe import Recipe
from prep.split import SPLITS
from prep.writer import FileRecord

MANIFEST_NAME = "_MANIFEST.json"
PROVENANCE_NAME = "_PROVENANCE.json"
MANIFEST_VERSION = "v1"


def canonical_json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def corpus_manifest_sha256(source: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the source's kind, revision and files."""
    ident = {"kind": source["kind"], "revision": source["revision"], "files": source["files"]}
    return hashlib.sha256(canonical_json(ident)).hexdigest()


@dataclass(frozen=True)
class SplitTotals:
    n_tokens: int
    n_docs: int
    text_bytes: int
    text_tokens: int
    files: tuple[FileRecord, ...]


def build_manifest(
    *,
    recipe: Recipe,
    dataset: str,
    tokenizer: TokenizerIdentity,
    source: dict[str, Any],
    totals: dict[str, SplitTotals],
) -> dict[str, Any]:
    """The manifest as an ordered dict (manifest.md's key order).

    ``source`` is ``{kind, uri, revision, text_column, split_column, files, rows_visited,
    empty_rows_skipped, prefix_sha256}``."""
    val = totals["val"]
    beta = val.text_bytes / val.text_tokens if val.text_tokens else None
    files: list[dict[str, Any]] = sorted(
        (
            {
                "name": r.name,
                "split": split,
                "n_tokens": r.n_tokens,
                "n_docs": r.n_docs,
                "sha256": r.sha256,
            }
            for split in SPLITS
            for r in totals[split].files
        ),
        key=lambda f: str(f["name"]),
    )
    return {
        "version": MANIFEST_VERSION,
        "dataset": dataset,
        "tokenizer_id": tokenizer.tokenizer_id,
        "tokenizer_sha256": tokenizer.sha256,
        "vocab_size": tokenizer.vocab_size,
        "doc_sep_id": tokenizer.doc_sep_id,
        "sep_position": recipe.sep_position,
        "bin_version": version_for_vocab(tokenizer.vocab_size),
        "max_file_tokens": recipe.max_file_tokens,
        "corpus_manifest_sha256": corpus_manifest_sha256(source),
        "source": source,
        "recipe": recipe.manifest_recipe(),
        "val_bytes_per_token": beta,
        "totals": {
            split: {
                "n_tokens": totals[split].n_tokens,
                "n_docs": totals[split].n_docs,
                "n_files": len(totals[split].files),
            }
            for split in SPLITS
        },
        "files": files,
    }


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The manifest's exact serialization (manifest.md)."""
    return (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    atomic_write_bytes(directory / MANIFEST_NAME, manifest_bytes(manifest))


def read_manifest(directory: Path) -> dict[str, Any]:
    """Parse ``_MANIFEST.json``; raises ``IntegrityError`` if missing or unparseable."""
    path = directory / MANIFEST_NAME
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError as e:
        raise IntegrityError(f"{path} is missing; this is not a prep dataset", path=path) from e
    except ValueError as e:
        raise IntegrityError(f"{path} is not valid JSON ({e})", path=path) from e
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
        raise IntegrityError(
            f"{path}: manifest version {data.get('version') if isinstance(data, dict) else None!r}"
            f" is not {MANIFEST_VERSION!r}",
            path=path,
        )
    return data


def package_versions() -> dict[str, str]:
    """Installed versions of the packages prep's output depends on or reads with."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("prep", "tokenizers", "numpy", "pyarrow", "huggingface-hub", "filelock"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def build_provenance(
    *,
    started_at: float,
    finished_at: float,
    active_seconds: float,
    resumes: int,
    tokens: int,
    text_bytes: int,
    source_mtimes: dict[str, int],
    argv: list[str] | None,
    refresh: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """This run's facts: timings, throughput, resumes, versions, host."""
    return {
        "started_at": started_at,
        "finished_at": finished_at,
        "active_seconds": round(active_seconds, 3),
        "resumes": resumes,
        "tokens_per_second": round(tokens / active_seconds, 1) if active_seconds else None,
        "text_mb_per_second": round(text_bytes / 1e6 / active_seconds, 3)
        if active_seconds
        else None,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "packages": package_versions(),
        "argv": argv,
        "source_mtimes_ns": source_mtimes,
        "refresh": refresh,
    }


def write_provenance(directory: Path, provenance: dict[str, Any]) -> None:
    data = json.dumps(provenance, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    atomic_write_bytes(directory / PROVENANCE_NAME, data.encode("utf-8"))
