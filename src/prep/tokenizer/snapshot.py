"""The checkpoints of training's two phases of its own: counting pieces (with a
pre-tokenizer) and merging. Each is a JSON commit file naming one data file beside it:

- merging: ``sequence-NNNNNNNNNN.u32`` (the live ids as native uint32, documents separated
  by ``0xFFFFFFFF``; ``N`` the number of merges), then ``merging.json`` (``{"version",
  "merges": [[left, right, count], ...], "sequence", "sequence_sha256"}``);
- counting: ``pieces-NNNNNNNNNN.bin`` (the piece table so far, :mod:`.pieces`; ``N`` the
  train documents counted), then ``counting.json`` (``{"version", "documents",
  "sequence", "sequence_sha256"}``).

The data file is written atomically first, then the JSON file replaced atomically: the
commit point. Data files it does not name are stray (a kill between the two writes) and are
removed on the next save.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from prep.errors import IntegrityError
from prep.fsio import atomic_write_bytes, stray_temps
from prep.tokenizer.pieces import PieceTable

CHECKPOINT_FILE = "merging.json"
COUNT_FILE = "counting.json"
VERSION = 1
T = TypeVar("T")


def _commit(staging: Path, name: str, data_name: str, data: bytes,
            body: dict[str, Any]) -> None:
    """Atomic: a kill at any instant leaves the previous checkpoint or this one."""
    atomic_write_bytes(staging / data_name, data)
    body = {"version": VERSION, **body, "sequence": data_name,
            "sequence_sha256": hashlib.sha256(data).hexdigest()}
    atomic_write_bytes(staging / name, json.dumps(body).encode())
    stem = data_name.split("-")[0]
    for old in staging.glob(f"{stem}-*.{data_name.rsplit('.', 1)[1]}"):
        if old.name != data_name:
            old.unlink()
    for stray in stray_temps(staging):
        stray.unlink(missing_ok=True)


def _read(staging: Path, name: str, what: str, parse: Callable[[dict[str, Any]], T]
          ) -> tuple[T, bytes] | None:
    """What ``parse`` makes of the committed body, and the data file; None when there is
    none; ``IntegrityError`` when they are unreadable or disagree."""
    path = staging / name
    if not path.is_file():
        return None
    try:
        body = json.loads(path.read_text())
        if body["version"] != VERSION:
            raise ValueError(f"version {body['version']!r}, not {VERSION}")
        parsed = parse(body)
        data = (staging / body["sequence"]).read_bytes()
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise IntegrityError(f"{path}: unreadable {what} ({e}); delete {staging} to "
                             "start over", path=path) from e
    if hashlib.sha256(data).hexdigest() != body["sequence_sha256"]:
        raise IntegrityError(f"{staging / body['sequence']}: SHA-256 differs from "
                             f"{path}'s; delete {staging} to start over", path=path)
    return parsed, data


@dataclass(frozen=True)
class MergeCheckpoint:
    merges: tuple[tuple[int, int, int], ...]
    sequence: bytes

    @property
    def sequence_name(self) -> str:
        return f"sequence-{len(self.merges):010d}.u32"

    def save(self, staging: Path) -> None:
        """Atomic: a kill at any instant leaves the previous checkpoint or this one."""
        _commit(staging, CHECKPOINT_FILE, self.sequence_name, self.sequence,
                {"merges": [list(m) for m in self.merges]})

    @classmethod
    def load(cls, staging: Path) -> MergeCheckpoint | None:
        """The last checkpoint, or None; ``IntegrityError`` when its files disagree."""
        found = _read(staging, CHECKPOINT_FILE, "merge checkpoint", lambda body: tuple(
            (int(a), int(b), int(c)) for a, b, c in body["merges"]))
        return None if found is None else cls(*found)


@dataclass(frozen=True)
class CountCheckpoint:
    """The pieces of the first ``documents`` train documents."""

    documents: int
    table: PieceTable

    def save(self, staging: Path) -> None:
        """Atomic: a kill at any instant leaves the previous checkpoint or this one."""
        _commit(staging, COUNT_FILE, f"pieces-{self.documents:010d}.bin",
                self.table.to_bytes(), {"documents": self.documents})

    @staticmethod
    def remove(staging: Path) -> None:
        """Once counting's result is written: the commit file first, then the table it names
        (a kill between leaves a stray the end of training removes)."""
        (staging / COUNT_FILE).unlink(missing_ok=True)
        for data in staging.glob("pieces-*.bin"):
            data.unlink()

    @classmethod
    def load(cls, staging: Path) -> CountCheckpoint | None:
        """The last checkpoint, or None; ``IntegrityError`` when its files disagree."""
        found = _read(staging, COUNT_FILE, "piece-count checkpoint",
                      lambda body: int(body["documents"]))
        if found is None:
            return None
        try:
            return cls(found[0], PieceTable.from_bytes(found[1]))
        except ValueError as e:
            raise IntegrityError(f"{staging / COUNT_FILE}: unreadable piece table ({e}); "
                                 f"delete {staging} to start over") from e
