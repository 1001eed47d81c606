"""Verify a staging directory against its checkpoint, before changing anything.

Every check here only reads. A refusal leaves staging byte-for-byte intact; only after every
check passes does the pipeline truncate the open files and delete unnamed files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prep.binfile import (
    HEADER_BYTES,
    dtype_for_version,
    hash_ids_prefix,
    unpack_header,
    version_for_vocab,
)
from prep.checkpoint import Checkpoint
from prep.encoders import TokenizerIdentity
from prep.errors import FormatError, IntegrityError
from prep.fsio import file_sha256
from prep.manifest import package_versions
from prep.recipe import Recipe
from prep.sources import Source

logger = logging.getLogger(__name__)

# Packages whose version can change the output bytes.
OUTPUT_PACKAGES = ("tokenizers", "numpy")


def recipe_conflicts(saved: Recipe, typed: dict[str, Any]) -> list[str]:
    """Options typed on the command line that differ from the checkpoint's recipe."""
    out = []
    for name, value in sorted(typed.items()):
        if getattr(saved, name) != value:
            flag = "--" + name.replace("_", "-")
            was = getattr(saved, name)
            out.append(f"{flag}: typed {value!r}, the run was started with {was!r}")
    return out


def check_recipe(staging: Path, saved: Recipe, typed: dict[str, Any]) -> None:
    """Refuse typed options that contradict the run being resumed, listing each."""
    conflicts = recipe_conflicts(saved, typed)
    if conflicts:
        raise IntegrityError(
            f"--resume of {staging}: options contradict the run being resumed:\n  "
            + "\n  ".join(conflicts)
            + "\nDrop them (the recipe comes from the checkpoint), or use a new --out"
        )


def source_differences(saved: dict[str, Any], source: Source) -> list[str]:
    """How the current file list differs from the checkpoint's (paths and sizes)."""
    before = {f["path"]: int(f["size"]) for f in saved["files"]}
    now = {f.path: f.size for f in source.files}
    diffs = []
    for path in sorted(set(before) | set(now)):
        if path not in now:
            diffs.append(f"{path}: removed")
        elif path not in before:
            diffs.append(f"{path}: added")
        elif before[path] != now[path]:
            diffs.append(f"{path}: size {before[path]:,} -> {now[path]:,} bytes")
    if saved.get("revision") != source.revision:
        diffs.append(f"revision {saved.get('revision')} -> {source.revision}")
    return diffs


def tokenizer_differences(saved: dict[str, Any], now: TokenizerIdentity) -> list[str]:
    current = now.to_json()
    return [
        f"{key}: {saved.get(key)!r} -> {current[key]!r}"
        for key in ("sha256", "vocab_size", "doc_sep_id")
        if saved.get(key) != current[key]
    ]


def version_differences(saved: dict[str, str], now: dict[str, str]) -> list[str]:
    return [
        f"{name} {saved.get(name)} -> {now.get(name)}"
        for name in OUTPUT_PACKAGES
        if saved.get(name) != now.get(name)
    ]


def check_source(staging: Path, cp: Checkpoint, source: Source) -> None:
    """Refuse a source whose listing changed, or whose unread files were modified (they have
    no recorded hash yet, so their mtime is the evidence). Arms the per-file hash checks of
    the files already read (``expected_sha256``)."""
    diffs = source_differences(cp.source, source)
    if diffs:
        raise IntegrityError(
            f"--resume of {staging}: the source changed since the run started:\n  "
            + "\n  ".join(diffs)
            + "\nRestore the original files, or start a new run with a new --out"
        )
    recorded = {f["path"]: f["sha256"] for f in cp.source["files"]}
    touched = []
    for f in source.files:
        if recorded.get(f.path):
            f.expected_sha256 = recorded[f.path]
        elif source.kind == "parquet" and cp.run.source_mtimes.get(f.path) != f.mtime_ns:
            touched.append(f.path)
    if touched:
        raise IntegrityError(
            f"--resume of {staging}: source files not yet read were modified since the run "
            f"started (mtime changed): {', '.join(touched[:5])}"
            + (f" and {len(touched) - 5} more" if len(touched) > 5 else "")
            + ". Restore them, or start a new run with a new --out"
        )


def check_tokenizer(staging: Path, cp: Checkpoint, identity: TokenizerIdentity) -> None:
    diffs = tokenizer_differences(cp.tokenizer, identity)
    if diffs:
        raise IntegrityError(
            f"--resume of {staging}: the tokenizer changed since the run started "
            f"({'; '.join(diffs)}); restore the original {cp.recipe.tokenizer}, or start a "
            "new run with a new --out"
        )


def check_versions(staging: Path, cp: Checkpoint, now: dict[str, str], allow: bool) -> None:
    diffs = version_differences(cp.versions, now)
    if diffs and not allow:
        raise IntegrityError(
            f"--resume of {staging}: installed versions differ from the run's "
            f"({'; '.join(diffs)}); they can change the output. Reinstall those versions, "
            "or pass --allow-version-change to accept the risk"
        )


def output_versions() -> dict[str, str]:
    """Installed versions of the packages that can change the output bytes."""
    return {k: v for k, v in package_versions().items() if k in OUTPUT_PACKAGES}


@dataclass
class OpenPrefix:
    """A verified open file: its path, committed ids and a hasher over them."""

    path: Path
    n: int
    hasher: Any


def verify_files(staging: Path, cp: Checkpoint, vocab_size: int) -> dict[str, OpenPrefix | None]:
    """Check every sealed file's SHA-256 and each open file's committed prefix.

    Returns, per split, the open file's verified prefix. Raises ``IntegrityError`` naming
    the first file that disagrees; reads only."""
    width = dtype_for_version(version_for_vocab(vocab_size)).itemsize
    opened: dict[str, OpenPrefix | None] = {}
    for split, state in cp.splits.items():
        for rec in state.sealed:
            path = staging / rec.name
            if not path.is_file():
                raise IntegrityError(
                    f"{path} is missing but the checkpoint lists it as sealed; staging was "
                    f"tampered with. Delete {staging} to start over",
                    path=path,
                )
            sha = file_sha256(path)
            if sha != rec.sha256:
                raise IntegrityError(
                    f"{path}: SHA-256 {sha[:12]}… is not the checkpoint's {rec.sha256[:12]}…; "
                    f"the file was modified after it was sealed. Delete {staging} to start "
                    "over",
                    path=path,
                )
        if state.open is None:
            opened[split] = None
            continue
        path = staging / state.open.name
        need = HEADER_BYTES + state.open.n_tokens * width
        if not path.is_file() or path.stat().st_size < need:
            raise IntegrityError(
                f"{path} is missing or shorter than its {state.open.n_tokens:,} committed ids; "
                f"staging was damaged. Delete {staging} to start over",
                path=path,
            )
        try:
            with open(path, "rb") as f:
                unpack_header(f.read(HEADER_BYTES), where=str(path))
            hasher = hash_ids_prefix(path, state.open.n_tokens, width)
        except FormatError as e:
            raise IntegrityError(f"{e}; delete {staging} to start over", path=path) from e
        if hasher.hexdigest() != state.open.ids_sha256:
            raise IntegrityError(
                f"{path}: its first {state.open.n_tokens:,} ids do not match the checkpoint's "
                f"hash; the file was modified. Delete {staging} to start over",
                path=path,
            )
        opened[split] = OpenPrefix(path, state.open.n_tokens, hasher)
    return opened


def unnamed_files(staging: Path, cp: Checkpoint) -> list[Path]:
    """Files in staging written after the checkpoint: ``.bin`` files it does not name, and
    temporary files of interrupted atomic writes."""
    named: set[str] = set()
    for state in cp.splits.values():
        named.update(r.name for r in state.sealed)
        if state.open is not None:
            named.add(state.open.name)
    stray = [p for p in staging.glob("*.bin") if p.name not in named]
    stray += staging.glob(".*.tmp")
    return sorted(stray)
