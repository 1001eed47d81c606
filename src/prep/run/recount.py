"""What resume recomputes to check a checkpoint's counts, from what it reads anyway.

The checkpoint's digest (``prep.state.checkpoint``) refuses an edited file, but it is no
signature: whoever edits the file can recompute it. So resume also recounts, reading only:

- per split, the running totals against the sum of the file records (tokens, documents,
  and text tokens = tokens - documents when there is a separator), and each file against
  the rollover rule (only a lone document may exceed ``max_file_tokens``);
- per shard, documents against the separators the format counted while hashing it: exactly
  as many when the separator can only be a separator (``Encoder.sep_exclusive``), at least
  as many otherwise (an ordinary token can also occur inside documents);
- from the replayed source rows, with the checkpoint's recipe: empty rows, and documents
  and text bytes per split (an edited split fraction shows here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prep.errors import IntegrityError
from prep.state.checkpoint import Checkpoint
from prep.state.shards import SplitState


@dataclass
class ReplayCounts:
    """What the replay of the committed rows recomputes: empty rows, and documents and
    their text bytes per split."""

    empty_rows: int = 0
    docs: dict[str, int] = field(default_factory=dict)
    text_bytes: dict[str, int] = field(default_factory=dict)

    def add_doc(self, split: str, n_bytes: int) -> None:
        self.docs[split] = self.docs.get(split, 0) + 1
        self.text_bytes[split] = self.text_bytes.get(split, 0) + n_bytes


def refuse(staging: Path, path: Path, what: str) -> IntegrityError:
    return IntegrityError(
        f"{path}: {what}; staging or its checkpoint was modified. Delete {staging} to start over",
        path=path,
    )


def check_docs(
    staging: Path, name: str, docs: int, seps: int, sep: int | None, exclusive: bool
) -> None:
    """A shard's documents against its separators: each document has exactly one; an
    ordinary-token separator can also occur inside documents, so then only
    ``docs <= seps`` holds. Without a separator there is nothing to count."""
    if sep is None:
        return
    if (exclusive and seps != docs) or seps < docs:
        raise refuse(staging, staging / name, f"holds {seps:,} separators but {docs:,} documents")


def check_totals(
    staging: Path, split: str, state: SplitState, sep: int | None, max_file_tokens: int
) -> None:
    """A split's running totals against its files' records, and each file against the
    rollover rule."""
    files = [(r.name, r.n_tokens, r.n_docs) for r in state.sealed]
    if state.open is not None:
        files.append((state.open.name, state.open.n_tokens, state.open.n_docs))
    for name, tokens, docs in files:
        if docs > 1 and tokens > max_file_tokens:
            raise refuse(
                staging,
                staging / name,
                f"holds {tokens:,} tokens in {docs:,} documents, more than the recipe's "
                f"--max-file-tokens {max_file_tokens:,} allows",
            )
    tokens, docs = sum(f[1] for f in files), sum(f[2] for f in files)
    text = state.n_tokens - (state.n_docs if sep is not None else 0)
    if (tokens, docs, text) != (state.n_tokens, state.n_docs, state.text_tokens):
        raise refuse(
            staging,
            staging / "checkpoint.json",
            f"{split} totals ({state.n_tokens:,} tokens, {state.n_docs:,} docs, "
            f"{state.text_tokens:,} text tokens) disagree with its files ({tokens:,} tokens, "
            f"{docs:,} docs, {text:,} text tokens)",
        )


def check_replayed(staging: Path, cp: Checkpoint, counts: ReplayCounts) -> None:
    """The checkpoint's row and document counts against those the replay recomputed from
    the committed source rows with the checkpoint's recipe."""
    p = cp.progress
    want = [
        ("empty rows", p.empty_rows_skipped, counts.empty_rows),
        ("documents", p.docs_written, sum(counts.docs.values())),
    ]
    for split, state in cp.splits.items():
        want.append((f"{split} documents", state.n_docs, counts.docs.get(split, 0)))
        want.append((f"{split} text bytes", state.text_bytes, counts.text_bytes.get(split, 0)))
    wrong = [
        f"{what}: {saved:,} recorded, {found:,} in the source rows"
        for what, saved, found in want
        if saved != found
    ]
    if wrong:
        raise IntegrityError(
            f"--resume of {staging}: the checkpoint's counts disagree with the "
            f"{p.rows_visited:,} committed source rows:\n  "
            + "\n  ".join(wrong)
            + f"\nThe checkpoint or the source was modified. Delete {staging} to start over"
        )
