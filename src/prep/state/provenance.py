"""``_PROVENANCE.json``: this run's facts that may differ between runs (timings, host,
versions, the command line, source mtimes for the next refresh), and what a refresh
changed. Never part of the deterministic manifest."""

from __future__ import annotations

import json
import platform
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prep.fsio import atomic_write_bytes
from prep.state import fields
from prep.state.manifest import PROVENANCE_NAME, package_versions


def host_platform() -> str:
    """``SYSTEM-RELEASE-MACHINE`` of this host (``Linux-6.1.0-13-amd64-x86_64``): what
    ``platform.platform()`` says but its processor field, which costs a ``uname -p``
    subprocess on Linux and which it drops anyway when it equals the machine."""
    u = platform.uname()  # its processor field is computed only when read
    return f"{u.system}-{u.release}-{u.machine}"


@dataclass(frozen=True)
class RefreshNote:
    """Why a refresh rebuilt: the published corpus hash it replaces and what changed; then
    whether it continued the published version (``incremental``, reusing ``reused_*`` of
    it) or rebuilt from scratch, and why (``fallback``)."""

    previous_corpus_manifest_sha256: str | None
    changes: tuple[str, ...]
    incremental: bool = False
    fallback: str | None = None
    reused_files: int = 0
    reused_rows: int = 0
    reused_shards: int = 0
    reused_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "previous_corpus_manifest_sha256": self.previous_corpus_manifest_sha256,
            "changes": list(self.changes),
            "incremental": self.incremental,
            "fallback": self.fallback,
            "reused_files": self.reused_files,
            "reused_rows": self.reused_rows,
            "reused_shards": self.reused_shards,
            "reused_tokens": self.reused_tokens,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> RefreshNote | None:
        if d is None:
            return None
        return cls(
            fields.maybe_text(d, "previous_corpus_manifest_sha256"),
            fields.each(d, "changes", fields.as_text, default=()),
            fields.flag(d, "incremental", default=False),
            fields.maybe_text(d, "fallback"),
            fields.integer(d, "reused_files", default=0),
            fields.integer(d, "reused_rows", default=0),
            fields.integer(d, "reused_shards", default=0),
            fields.integer(d, "reused_tokens", default=0),
        )

    def report(self, rows_visited: int, n_files: int, seconds: float) -> dict[str, Any]:
        """The note with what the run read, and the time an incremental refresh saved:
        the reused rows at this run's own seconds per row read (an estimate)."""
        rows_read = rows_visited - self.reused_rows
        saved = None
        if self.incremental and rows_read > 0:
            saved = round(self.reused_rows * seconds / rows_read, 1)
        return {
            **self.to_json(),
            "read_files": n_files - self.reused_files,
            "read_rows": rows_read,
            "seconds_saved_estimate": saved,
        }


@dataclass(frozen=True)
class Provenance:
    """This run's facts, in ``_PROVENANCE.json``'s key order."""

    started_at: float
    finished_at: float
    active_seconds: float
    resumes: int
    tokens: int
    text_bytes: int
    argv: list[str] | None
    source_mtimes_ns: dict[str, int]
    refresh: dict[str, Any] | None = None  # RefreshNote.report
    engine: str | None = None  # how the ids were computed (not part of the recipe)
    workers: int | None = None  # worker processes that tokenized (0: the main process did)
    cross_check: dict[str, Any] | None = None  # what the run-time cross-check re-encoded
    # documents each engine encoded (a checked engine gives its guard's to the reference)
    documents_by_engine: dict[str, int] | None = None
    main_cpu_seconds: float | None = None  # this process's CPU while committing
    commit_thread_cpu_seconds: float | None = None  # the committing thread's share of it
    main_threads_cpu_seconds: dict[str, float] | None = None  # each thread's, by name
    copiers: dict[str, float] | None = None  # the processes that wrote the ids for it
    packages: dict[str, str] = field(default_factory=package_versions)

    def to_json(self) -> dict[str, Any]:
        secs = self.active_seconds
        return {
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "active_seconds": round(secs, 3),
            "resumes": self.resumes,
            "tokens_per_second": round(self.tokens / secs, 1) if secs else None,
            "text_mb_per_second": round(self.text_bytes / 1e6 / secs, 3) if secs else None,
            "python": sys.version.split()[0],
            "platform": host_platform(),
            "host": socket.gethostname(),
            "packages": self.packages,
            "argv": self.argv,
            "source_mtimes_ns": self.source_mtimes_ns,
            "refresh": self.refresh,
            "engine": self.engine,
            "workers": self.workers,
            "cross_check": self.cross_check,
            "documents_by_engine": self.documents_by_engine,
            "text_bytes": self.text_bytes,
            "main_cpu_seconds": _seconds(self.main_cpu_seconds),
            "commit_thread_cpu_seconds": _seconds(self.commit_thread_cpu_seconds),
            "main_threads_cpu_seconds": None if self.main_threads_cpu_seconds is None else {
                name: _seconds(v) for name, v in sorted(self.main_threads_cpu_seconds.items())},
            "copiers": self.copiers,
        }


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def provenance_bytes(provenance: Provenance | MergeProvenance) -> bytes:
    """``_PROVENANCE.json`` as written."""
    return (json.dumps(provenance.to_json(), indent=2, ensure_ascii=False) + "\n").encode()


def write_provenance(directory: Path, provenance: Provenance | MergeProvenance) -> None:
    atomic_write_bytes(directory / PROVENANCE_NAME, provenance_bytes(provenance))


def read_source_mtimes(directory: Path) -> dict[str, int]:
    """The source mtimes a published version recorded (empty when unreadable)."""
    prov = read_provenance_json(directory)
    try:
        return {str(k): int(v) for k, v in prov.get("source_mtimes_ns", {}).items()}
    except (AttributeError, ValueError):  # None (unreadable), or not what was written
        return {}


def read_packages(directory: Path) -> dict[str, str] | None:
    """The package versions a published version recorded (None when unreadable)."""
    prov = read_provenance_json(directory)
    try:
        return {str(k): str(v) for k, v in prov["packages"].items()}
    except (KeyError, TypeError, AttributeError):  # None (unreadable), or not what was written
        return None


def read_active_seconds(directory: Path) -> float | None:
    """Active time summed over a run and its resumes, from ``_PROVENANCE.json``."""
    prov = read_provenance_json(directory)
    try:
        return float(prov["active_seconds"])
    except (KeyError, TypeError, ValueError):  # None (unreadable), or not what was written
        return None


@dataclass(frozen=True)
class MergeProvenance:
    """``_PROVENANCE.json`` of a merged dataset: the merge's own facts and, under ``parts``,
    each part's ``_PROVENANCE.json`` as it was (None when unreadable)."""

    merged_at: float
    merge_seconds: float
    argv: list[str] | None
    parts: dict[str, Any]
    packages: dict[str, str] = field(default_factory=package_versions)

    def to_json(self) -> dict[str, Any]:
        return {
            "merged_at": self.merged_at,
            "merge_seconds": round(self.merge_seconds, 3),
            "python": sys.version.split()[0],
            "platform": host_platform(),
            "host": socket.gethostname(),
            "packages": self.packages,
            "argv": self.argv,
            "parts": self.parts,
        }


def read_provenance_json(directory: Path) -> Any:  # Any: a JSON value
    """A ``_PROVENANCE.json`` as plain JSON, or None when missing or unreadable."""
    try:
        return json.loads((directory / PROVENANCE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None

