"""The run-time cross-check: a fast engine's ids, re-computed by the reference on a sample.

A deterministic sample of documents (chosen by file path and row, so the same documents
whatever ``--workers``, ``--threads``, batch size or interruption) is re-encoded by
``tokenizers`` in the worker that tokenized it, before its batch is committed.

It is the second line of defence: the fast engine already gives the reference every
document holding a code point of its guard (:mod:`prep.encoders.guard`), so a difference
means the guard's set is incomplete. The run then stops with exit 1, naming the document
and its code points outside ASCII: nothing of that batch is committed, so ``--resume
--engine hf`` continues exactly.

Cost: one document in ``RATE``, each at the reference's speed (20-60x slower than
gigatoken single-threaded), so roughly 0.5-1.5 % of tokenizing, spread over the workers
(measured in docs/performance.md). Documents over ``MAX_BYTES`` are not sampled, so the reference's
~100 bytes per token of working memory never applies to a huge document.
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.encoders import Encode
from prep.errors import PrepError
from prep.run.work.tokenize import Docs
from prep.stream.order import Batch

logger = logging.getLogger(__name__)

RATE = 4096
MAX_BYTES = 1 << 20


def outside_ascii(text: str, most: int = 32) -> str:
    """The distinct code points of ``text`` outside ASCII, for a message: ``the document's
    code points outside ASCII: U+00E9, U+32DBA`` (the first ``most``, then how many)."""
    found = sorted({ord(c) for c in text if ord(c) > 0x7F})
    if not found:
        return "the document holds no code point outside ASCII"
    shown = ", ".join(f"U+{c:04X}" for c in found[:most])
    more = f" and {len(found) - most:,} more" if len(found) > most else ""
    return f"the document's code points outside ASCII: {shown}{more}"


class EngineMismatch(PrepError):
    """A fast engine's ids differ from the reference's: exit 1."""


def sampled(path: str, row: int) -> bool:
    """Whether the document at ``path`` row ``row`` is re-encoded (deterministic)."""
    return (zlib.crc32(path.encode("utf-8")) + row) % RATE == 0


@dataclass
class Rechecked:
    """What cross-checks re-encoded: documents, their bytes, and the CPU seconds it took;
    and (``by_engine``) how many documents each engine encoded in the first place (the
    fast engine routes those its guard holds to the reference)."""

    docs: int = 0
    bytes: int = 0
    seconds: float = 0.0
    by_engine: dict[str, int] = field(default_factory=dict)

    def since(self, before: Rechecked) -> Rechecked:
        """What was re-encoded after ``before`` (an earlier copy of this tally)."""
        return Rechecked(self.docs - before.docs, self.bytes - before.bytes,
                         self.seconds - before.seconds,
                         {k: n - before.by_engine.get(k, 0) for k, n in self.by_engine.items()})

    def add(self, other: Rechecked) -> None:
        """Add what another process's cross-check re-encoded (the workers check; the main
        process reports)."""
        self.docs += other.docs
        self.bytes += other.bytes
        self.seconds += other.seconds
        for k, n in other.by_engine.items():
            self.by_engine[k] = self.by_engine.get(k, 0) + n

    def stats(self) -> dict[str, Any]:
        """What was re-encoded (for ``_PROVENANCE.json``)."""
        return {"rate": RATE, "documents": self.docs, "bytes": self.bytes,
                "cpu_seconds": round(self.seconds, 3)}

    def summary(self) -> None:
        """Log what was checked, once at the end of a run."""
        if self.docs:
            logger.info(
                "cross-check: %s documents (%.1f MB) re-encoded with hf in %.2f s of CPU, no "
                "difference",
                f"{self.docs:,}", self.bytes / 1e6, self.seconds,
            )


class CrossCheck:
    """Re-encodes the sampled documents of each batch with ``reference`` (a function of
    texts and UTF-8 bytes returning ``FlatIds``) and raises ``EngineMismatch``; ``done``
    adds up what it re-encoded."""

    def __init__(self, engine: str, reference: Encode, out: str) -> None:
        self.engine = engine
        self.reference = reference
        self.out = out
        self.done = Rechecked()

    def wants(self, batch: Batch) -> bool:
        """Whether any document of ``batch`` is sampled (most batches have none, and need
        not be split into documents for :meth:`check`)."""
        return any(sampled(path, row) for path, row in batch.doc_where)

    def check(self, batch: Batch, ids: Docs) -> None:
        """Compare the batch's sampled documents; ``ids`` holds one array per document."""
        t = time.thread_time()  # CPU: wall time on a shared machine says little
        utf8 = batch.doc_utf8()
        for k, (path, row) in enumerate(batch.doc_where):
            data = utf8[k]
            if k >= len(ids) or isinstance(ids[k], Exception) or not sampled(path, row):
                continue
            if len(data) > MAX_BYTES:
                continue
            want = self.reference([data.decode("utf-8")], [data]).ids
            self.done.docs += 1
            self.done.bytes += len(data)
            if not np.array_equal(np.asarray(ids[k]), want):
                self._mismatch(path, row, data.decode("utf-8"), np.asarray(ids[k]), want)
        self.done.seconds += time.thread_time() - t

    def _mismatch(self, path: str, row: int, text: str, got: npt.NDArray[Any],
                  want: npt.NDArray[Any]) -> None:
        n = min(len(got), len(want))
        at = next((i for i in range(n) if got[i] != want[i]), n)
        raise EngineMismatch(
            f"{path} row {row}: the {self.engine} engine's ids differ from tokenizers' at "
            f"token {at:,} of the document ({len(got):,} ids against {len(want):,}), so its "
            f"guard's set is incomplete: {outside_ascii(text)}. Nothing of its batch was "
            f"committed. Continue exactly with: prep prepare --out {self.out} --resume "
            "--engine hf (and please report the document and these code points)",
            path=path,
            row=row,
        )
