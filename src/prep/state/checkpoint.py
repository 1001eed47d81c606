"""The checkpoint: the committed state of a run, saved atomically between batches.

Commit protocol: fsync every split's open file, then write ``checkpoint.json`` atomically
(temp, fsync, replace, fsync dir). Whatever a crash leaves behind, the checkpoint names
only bytes that were durable before it was written; resume truncates the rest.

Format 2 carries ``digest``: the SHA-256 of the rest of its content in canonical JSON
(sorted keys, no spaces, UTF-8). Any edit or corruption of the file is refused on load.
The digest is no signature (whoever edits the file can recompute it), so resume also
recomputes every count it can from the shards and source rows it reads
(``prep.run.resume.claims``).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prep.errors import IntegrityError, UsageError, lost_file
from prep.fsio import atomic_write_bytes, fsync_dir
from prep.recipe import REQUIRED, Recipe
from prep.split import SPLITS
from prep.state import fields
from prep.state.identity import SourceIdentity, TokenizerIdentity
from prep.state.provenance import RefreshNote
from prep.state.shards import SplitState

CHECKPOINT_NAME = "checkpoint.json"
# 3: the prefix digest became a per-row chain (manifest v3) and a progress may carry the
# published stream it continues. A format-2 staging directory's digest is the old running
# hash: resuming it here would report a changed source, so it is refused as another
# version's instead. 4: the chain links each row's SHA-256 (manifest v4); same reason.
# 5: an open shard records the chain of its appended segments and their lengths (``ids_chain``,
# ``segments``) instead of one running SHA-256 of its ids (``ids_sha256``).
FORMAT = 5


@dataclass(frozen=True)
class StreamBase:
    """Where a continued stream starts (an incremental refresh continues the published
    version): after the first ``files`` files of the read order, ``rows_visited`` rows
    (``empty_rows_skipped`` of them empty) whose prefix digest is ``prefix_sha256``. A
    resume replays only the rows after it; the files before it are never opened (their
    fingerprints vouch for them, or they are hashed: :func:`prep.sources.arm_expected`)."""

    files: int
    rows_visited: int
    empty_rows_skipped: int
    prefix_sha256: str
    docs: dict[str, int] = field(default_factory=dict)  # per split, at the base
    text_bytes: dict[str, int] = field(default_factory=dict)  # per split, as restored

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "rows_visited": self.rows_visited,
            "empty_rows_skipped": self.empty_rows_skipped,
            "prefix_sha256": self.prefix_sha256,
            "docs": self.docs,
            "text_bytes": self.text_bytes,
        }

    @staticmethod
    def start(base: StreamBase | None) -> tuple[int, int]:
        """Where a stream opens: (first file of the read order, rows before it); a stream
        that continues none opens at (0, 0)."""
        return (0, 0) if base is None else (base.files, base.rows_visited)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StreamBase:
        return cls(
            fields.integer(d, "files"),
            fields.integer(d, "rows_visited"),
            fields.integer(d, "empty_rows_skipped"),
            fields.sha256(d, "prefix_sha256"),
            fields.mapping(d, "docs", fields.as_count, default={}),
            fields.mapping(d, "text_bytes", fields.as_count, default={}),
        )


@dataclass(frozen=True)
class Progress:
    """How far the stream was committed (from ``base`` when the run continues one)."""

    rows_visited: int = 0
    docs_written: int = 0
    empty_rows_skipped: int = 0
    prefix_sha256: str = ""
    finished: bool = False
    base: StreamBase | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rows_visited": self.rows_visited,
            "docs_written": self.docs_written,
            "empty_rows_skipped": self.empty_rows_skipped,
            "prefix_sha256": self.prefix_sha256,
            "finished": self.finished,
            "base": self.base.to_json() if self.base else None,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Progress:
        return cls(
            rows_visited=fields.integer(d, "rows_visited"),
            docs_written=fields.integer(d, "docs_written"),
            empty_rows_skipped=fields.integer(d, "empty_rows_skipped"),
            prefix_sha256=fields.sha256(d, "prefix_sha256"),
            finished=fields.flag(d, "finished"),
            base=fields.maybe_nested(d, "base", StreamBase.from_json),
        )


@dataclass(frozen=True)
class RunFacts:
    """Facts about the run across its resumes (they go to _PROVENANCE.json only)."""

    started_at: float = field(default_factory=time.time)
    resumes: int = 0
    active_seconds: float = 0.0
    source_mtimes: dict[str, int] = field(default_factory=dict)
    refresh: RefreshNote | None = None  # what a refresh build changed

    def to_json(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at,
            "resumes": self.resumes,
            "active_seconds": self.active_seconds,
            "source_mtimes": self.source_mtimes,
            "refresh": self.refresh.to_json() if self.refresh else None,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunFacts:
        return cls(
            started_at=fields.number(d, "started_at"),
            resumes=fields.integer(d, "resumes"),
            active_seconds=fields.number(d, "active_seconds"),
            source_mtimes=fields.mapping(d, "source_mtimes", _mtime, default={}),
            refresh=fields.maybe_nested(d, "refresh", RefreshNote.from_json),
        )


@dataclass(frozen=True)
class Checkpoint:
    """Everything needed to verify staging and continue the run."""

    recipe: Recipe
    source: SourceIdentity
    tokenizer: TokenizerIdentity
    versions: dict[str, str]  # packages that can change the output
    progress: Progress
    splits: dict[str, SplitState]
    run: RunFacts
    written_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "written_at": self.written_at,
            "recipe": self.recipe.to_json(),
            "source": self.source.to_json(),
            "tokenizer": self.tokenizer.to_json(),
            "versions": self.versions,
            "progress": self.progress.to_json(),
            "splits": {name: s.to_json() for name, s in self.splits.items()},
            "run": self.run.to_json(),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Checkpoint:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            found = d.get("format") if isinstance(d, dict) else None
            raise IntegrityError(
                f"checkpoint format {found!r} is not the supported {FORMAT}; this staging "
                "directory was written by another version of prep. Resume it with that "
                "version, or delete the staging directory to start over"
            )
        splits = fields.mapping(d, "splits", fields.as_object(SplitState.from_json))
        if sorted(splits) != sorted(SPLITS):
            raise fields.FieldError("splits", f"holds {sorted(splits)}, expected {list(SPLITS)}")
        return cls(
            recipe=fields.nested(d, "recipe", _recipe),
            source=fields.nested(d, "source", SourceIdentity.from_json),
            tokenizer=fields.nested(d, "tokenizer", TokenizerIdentity.from_json),
            versions=fields.mapping(d, "versions", fields.as_text),
            progress=fields.nested(d, "progress", Progress.from_json),
            splits={name: splits[name] for name in SPLITS},
            run=fields.nested(d, "run", RunFacts.from_json),
            written_at=fields.number(d, "written_at", default=0.0),
        )


def _recipe(d: dict[str, Any]) -> Recipe:
    """The recipe, each setting of its type and in its range (a forged ``split_column``
    of 5 used to reach pyarrow and fail there with a bare ``TypeError``)."""
    for name in REQUIRED:
        fields.text(d, name)
    try:
        return Recipe.from_json(d)
    except UsageError as e:
        raise fields.FieldError("", str(e)) from e


def _mtime(value: object) -> int:
    return fields.integer({"": value}, "", minimum=None)


def content_digest(content: dict[str, Any]) -> str:
    """SHA-256 of ``content`` without its ``digest`` key, in canonical JSON."""
    body = {k: v for k, v in content.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def save(directory: Path, cp: Checkpoint) -> None:
    """Write ``checkpoint.json`` atomically (the caller has fsynced the open files).

    ``directory`` is fsynced first: a shard created since the last checkpoint (a rollover)
    has a name the new checkpoint lists, and after a power cut a checkpoint that survived
    must never list a name that did not."""
    fsync_dir(directory)
    save_content(directory, sealed_content(cp))


def sealed_content(cp: Checkpoint) -> dict[str, Any]:
    """``cp`` as ``checkpoint.json`` holds it: its JSON with its ``digest``."""
    content = cp.to_json()
    content["digest"] = content_digest(content)
    return content


def save_content(directory: Path, content: dict[str, Any]) -> None:
    """Write ``content`` (from :func:`sealed_content`) as ``checkpoint.json``, atomically
    (the caller made what it names durable)."""
    data = json.dumps(content, indent=1, ensure_ascii=False) + "\n"
    atomic_write_bytes(directory / CHECKPOINT_NAME, data.encode("utf-8"))


def load(directory: Path) -> Checkpoint:
    """Read and parse ``checkpoint.json``; raises ``IntegrityError`` if it is missing,
    corrupt or of an unknown format."""
    path = directory / CHECKPOINT_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError as e:
        raise lost_file(path, "is missing", directory) from e
    try:
        content = json.loads(raw)
        if isinstance(content, dict) and content.get("format") == FORMAT:
            _check_digest(path, content)
        return Checkpoint.from_json(content)
    except IntegrityError:
        raise
    except fields.FieldError as e:
        raise IntegrityError(
            f"{path}: {e}. prep never writes that: the file was edited and its digest "
            "recomputed, so the state it describes cannot be trusted (nothing was changed). "
            f"Restore the original file, or delete {directory} to start over",
            path=path,
        ) from e
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise IntegrityError(
            f"{path} is corrupt ({type(e).__name__}: {e}); it cannot be resumed. Delete "
            f"{directory} to start over",
            path=path,
        ) from e


def _check_digest(path: Path, content: dict[str, Any]) -> None:
    if content.get("digest") != content_digest(content):
        raise IntegrityError(
            f"{path} was modified or corrupted: its content does not match its digest, so "
            "prep cannot trust the state it describes (nothing was changed). Do not edit "
            f"the checkpoint: restore the original file, or delete {path.parent} to start "
            "over",
            path=path,
        )
