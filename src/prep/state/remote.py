"""The remote checkpoint of a run whose ``--out`` is a bucket: what a machine without the
local staging directory restores it from.

It is written into the bucket (``NAME.incomplete/checkpoint.json``) only after everything
it names is there: each sealed shard under its final name in ``NAME/`` (the SHA-256 of each
is in the local checkpoint it embeds), and each open shard's committed bytes as segments
(objects holding consecutive byte ranges of the local file, ``offset`` and ``size`` each,
with their SHA-256). ``checkpoint`` is the local checkpoint of that commit point, as its JSON
(with its own digest), so that a restore writes it back unchanged and the ordinary resume
checks it. ``owner`` names the machine and process that wrote it (a later run on another
machine takes over and writes its own); ``seq`` numbers the remote checkpoints of an output
(1, 2, ...), which are written under names of their own (``checkpoint-SEQ.json``): a reader
takes the newest that parses, so a store that shows a half-replaced object never leaves
a run without one.

Format 1. The record carries ``digest`` (as the local checkpoint does): the SHA-256 of the
rest of its content in canonical JSON; an edited or truncated object is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from prep.errors import IntegrityError
from prep.state import fields
from prep.state.checkpoint import Checkpoint, content_digest

REMOTE_FORMAT = 1


@dataclass(frozen=True)
class Segment:
    """``size`` bytes of an open shard's file from ``offset``, stored as object ``key``."""

    key: str
    offset: int
    size: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "offset": self.offset, "size": self.size, "sha256": self.sha256}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Segment:
        return cls(fields.text(d, "key"), fields.integer(d, "offset"), fields.integer(d, "size"),
                   fields.sha256(d, "sha256"))


@dataclass(frozen=True)
class RemoteCheckpoint:
    """A commit point whose shards are all in the bucket (see the module docstring)."""

    checkpoint: dict[str, Any]  # the local checkpoint's JSON content, digest included
    segments: dict[str, tuple[Segment, ...]]  # per open shard, its bytes in order
    owner: str
    seq: int

    @property
    def local(self) -> Checkpoint:
        """The embedded local checkpoint (its digest checked)."""
        if self.checkpoint.get("digest") != content_digest(self.checkpoint):
            raise IntegrityError("the remote checkpoint's embedded checkpoint fails its digest")
        return Checkpoint.from_json(self.checkpoint)

    def covered(self, name: str) -> int:
        """How many bytes of open shard ``name`` the segments hold (from byte 0)."""
        return sum(s.size for s in self.segments.get(name, ()))

    def to_bytes(self) -> bytes:
        content: dict[str, Any] = {
            "format": REMOTE_FORMAT,
            "seq": self.seq,
            "owner": self.owner,
            "checkpoint": self.checkpoint,
            "segments": {n: [s.to_json() for s in segs] for n, segs in self.segments.items()},
        }
        content["digest"] = content_digest(content)
        return (json.dumps(content, indent=1, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_bytes(cls, raw: bytes, where: str) -> RemoteCheckpoint:
        """Parse and check a remote checkpoint; ``IntegrityError`` naming ``where`` when it
        is corrupt, edited, or of another format."""
        fix = (f"delete {where} (and the objects of the unfinished run) to start over, or "
               "resume it with the version of prep that wrote it")
        try:
            content = json.loads(raw)
            if not isinstance(content, dict) or content.get("format") != REMOTE_FORMAT:
                found = content.get("format") if isinstance(content, dict) else None
                raise IntegrityError(
                    f"{where}: remote checkpoint format {found!r} is not the supported "
                    f"{REMOTE_FORMAT}; {fix}",
                    path=where,
                )
            if content.get("digest") != content_digest(content):
                raise IntegrityError(
                    f"{where} was modified or corrupted (its content does not match its "
                    f"digest); {fix}",
                    path=where,
                )
            segments = fields.mapping(
                content, "segments", lambda segs: fields.each(
                    {"": segs}, "", fields.as_object(Segment.from_json)))
            return cls(fields.obj(content["checkpoint"], "checkpoint"), segments,
                       fields.text(content, "owner"), fields.integer(content, "seq"))
        except IntegrityError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise IntegrityError(f"{where} is corrupt ({type(e).__name__}: {e}); {fix}",
                                 path=where) from e
