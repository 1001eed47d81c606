"""The merge phase's checkpoint: the merges so far and the sequence they leave, which is all
a resumed training needs (the next merge depends only on the current sequence).

Two files in staging: ``sequence-NNNNNNNNNN.u32`` (the live ids as native uint32, documents
separated by ``0xFFFFFFFF``; ``N`` the number of merges) written atomically first, then
``merging.json`` (``{"version", "merges": [[left, right, count], ...], "sequence",
"sequence_sha256"}``) replaced atomically: the commit point. Sequence files it does not name
are stray (a kill between the two writes) and are removed on the next save.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from prep.errors import IntegrityError
from prep.fsio import atomic_write_bytes, stray_temps

CHECKPOINT_FILE = "merging.json"
VERSION = 1


@dataclass(frozen=True)
class MergeCheckpoint:
    merges: tuple[tuple[int, int, int], ...]
    sequence: bytes

    @property
    def sequence_name(self) -> str:
        return f"sequence-{len(self.merges):010d}.u32"

    def save(self, staging: Path) -> None:
        """Atomic: a kill at any instant leaves the previous checkpoint or this one."""
        atomic_write_bytes(staging / self.sequence_name, self.sequence)
        body = {"version": VERSION, "merges": [list(m) for m in self.merges],
                "sequence": self.sequence_name,
                "sequence_sha256": hashlib.sha256(self.sequence).hexdigest()}
        atomic_write_bytes(staging / CHECKPOINT_FILE, json.dumps(body).encode())
        for old in staging.glob("sequence-*.u32"):
            if old.name != self.sequence_name:
                old.unlink()
        for stray in stray_temps(staging):
            stray.unlink(missing_ok=True)

    @classmethod
    def load(cls, staging: Path) -> MergeCheckpoint | None:
        """The last checkpoint, or None; ``IntegrityError`` when its files disagree."""
        path = staging / CHECKPOINT_FILE
        if not path.is_file():
            return None
        try:
            body = json.loads(path.read_text())
            if body["version"] != VERSION:
                raise ValueError(f"version {body['version']!r}, not {VERSION}")
            merges = tuple((int(a), int(b), int(c)) for a, b, c in body["merges"])
            sequence = (staging / body["sequence"]).read_bytes()
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise IntegrityError(f"{path}: unreadable merge checkpoint ({e}); delete "
                                 f"{staging} to start over", path=path) from e
        if hashlib.sha256(sequence).hexdigest() != body["sequence_sha256"]:
            raise IntegrityError(f"{staging / body['sequence']}: SHA-256 differs from "
                                 f"{path}'s; delete {staging} to start over", path=path)
        return cls(merges, sequence)
