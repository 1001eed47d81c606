"""What resume re-derives to check a checkpoint's claims, from what it reads anyway.

The checkpoint's digest (``prep.state.checkpoint``) refuses an edited file, but it is no
signature: whoever edits the file can recompute it. So resume believes no claim the staging
directory and the source can disprove, and this module is where each is checked (a new
claim, or a new way to check one, belongs here):

- every field is of its JSON type (``prep.state.fields``, as the checkpoint is loaded);
- the budgets against the counts (:func:`check_budgets`): no more rows than
  ``--max-documents``, and a run that did not finish is still below ``--train-tokens``;
- per split, before reading any shard (:func:`check_records`): the files named as the format
  names them, in order (a name is never a path out of staging); the running totals against
  the sum of the file records (tokens, documents, and text tokens = tokens - documents when
  there is a separator); and the cut rule (:func:`prep.stream.writer.needs_rollover`) from above:
  only a lone document may exceed ``max_file_tokens``;
- per split, from what hashing each shard saw of the separator (:func:`check_cuts`):
  documents against separators (exactly as many when the separator can only be a
  separator, ``Encoder.sep_exclusive``; at least as many otherwise), each shard starting
  (``prepend``) or ending (``append``) with one, and the cut rule from below: a file was
  sealed only because the next document, the first of the next file, would have crossed
  ``max_file_tokens`` (its length from the separators; where they cannot tell documents
  apart, :func:`check_source_cuts` tokenizes that document again from the replayed rows);
- from the replayed source rows, with the checkpoint's recipe (:func:`check_replayed`):
  empty rows, and documents and text bytes per split (an edited split fraction shows here);
- ``finished`` (:func:`check_finished`): the stream consumed every row, or stopped exactly
  at a budget (``--max-documents`` rows, or the train document that reached
  ``--train-tokens``, its length known as the cut rule's are).

A split packed ``--pack fixed`` is cut by other rules, checked by :mod:`prep.run.resume.packed`
in place of the cut rule's.

Whatever passes all of them describes what a run with the checkpoint's recipe would have
written, so continuing it publishes a manifest that says truthfully how it was made.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from prep.errors import IntegrityError
from prep.formats import ShardFormat
from prep.run.resume.packed import (
    Shard,
    check_fixed_cuts,
    check_fixed_records,
    separator_pieces,
)
from prep.split import SPLITS, TRAIN
from prep.state.checkpoint import Checkpoint
from prep.state.shards import SplitState

_TRAIN = SPLITS[TRAIN]


@dataclass
class ReplayCounts:
    """What the replay of the committed rows recomputes: empty rows, documents and their
    text bytes per split, the split of the last row when it was a document, and the texts
    of the documents ``wanted`` (per split, their ordinals: see :func:`wanted_docs`)."""

    empty_rows: int = 0
    docs: dict[str, int] = field(default_factory=dict)
    text_bytes: dict[str, int] = field(default_factory=dict)
    last_split: str | None = None
    wanted: dict[str, set[int]] = field(default_factory=dict)
    texts: dict[tuple[str, int], str] = field(default_factory=dict)

    def add_doc(self, split: str, n_bytes: int, text: str | None = None) -> None:
        ordinal = self.docs.get(split, 0)
        if text is not None and ordinal in self.wanted.get(split, ()):
            self.texts[split, ordinal] = text
        self.docs[split] = ordinal + 1
        self.text_bytes[split] = self.text_bytes.get(split, 0) + n_bytes


def wanted_docs(cp: Checkpoint) -> dict[str, set[int]]:
    """The documents whose lengths the claims need, per split, by ordinal: the first of
    each file after the first (the cut rule from below) and, for a run finished under
    ``--train-tokens``, the last train document. For when the shards cannot tell documents
    apart (no separator, or one that can occur inside documents): the replay keeps their
    texts and :func:`source_lengths` tokenizes them. Documents before a continued stream's
    base are not replayed (the published version they belong to was checked when made)."""
    base, whole = cp.progress.base, cp.recipe.pack == "whole"
    wanted: dict[str, set[int]] = {}
    for split, state in cp.splits.items():
        first = 0 if base is None else base.docs.get(split, 0)
        # fixed: a file is cut at its size, whatever document comes next
        files = shards_of(state)[:-1] if whole else []
        starts = itertools.accumulate(f.docs for f in files)
        wanted[split] = {n for n in starts if n >= first}
    budget, train = cp.recipe.train_tokens, cp.splits[_TRAIN]
    if cp.progress.finished and budget is not None and train.n_docs:
        wanted[_TRAIN].add(train.n_docs - 1)
    return wanted


def refuse(staging: Path, path: Path, what: str) -> IntegrityError:
    return IntegrityError(
        f"{path}: {what}; staging or its checkpoint was modified. Delete {staging} to start over",
        path=path,
    )


def _forged(staging: Path, what: str) -> IntegrityError:
    return refuse(staging, staging / "checkpoint.json", what)


def shards_of(state: SplitState) -> list[Shard]:
    """The split's files in order, sealed then open."""
    files = [Shard(r.name, r.n_tokens, r.n_docs, first=r.first_doc_at) for r in state.sealed]
    op = state.open
    if op is not None:
        files.append(Shard(op.name, op.n_tokens, op.n_docs, lengths=op.doc_lengths,
                           first=op.first_doc_at))
    return files


def check_budgets(staging: Path, cp: Checkpoint) -> None:
    """The budgets against the counts: a run visits at most ``--max-documents`` rows, and
    stops (finished) at the train document that reaches ``--train-tokens``."""
    recipe, p = cp.recipe, cp.progress
    if recipe.max_documents is not None and p.rows_visited > recipe.max_documents:
        raise _forged(
            staging,
            f"{p.rows_visited:,} rows were committed, but the recipe's --max-documents "
            f"{recipe.max_documents:,} stops the stream before",
        )
    train = cp.splits[_TRAIN].n_tokens
    if recipe.train_tokens is not None and not p.finished and train >= recipe.train_tokens:
        raise _forged(
            staging,
            f"train holds {train:,} tokens, so the recipe's --train-tokens "
            f"{recipe.train_tokens:,} was reached, yet the run is not finished",
        )


def check_records(
    staging: Path, split: str, state: SplitState, fmt: ShardFormat, sep: int | None,
    max_file_tokens: int, fixed: bool = False,
) -> None:
    """A split's file records before any file is read: names, totals, and the cut rule from
    above (``fixed``: the fixed packing's, :func:`check_fixed_records`)."""
    files = shards_of(state)
    if fixed:
        check_fixed_records(staging, files, max_file_tokens)
    for k, f in enumerate(files):
        if f.name != fmt.shard_name(split, k):
            raise _forged(
                staging,
                f"{split} file {k} is named {f.name!r}, not {fmt.shard_name(split, k)!r}",
            )
        if not fixed and f.first is not None:
            raise _forged(staging, f"{f.name} records first_doc_at under --pack whole")
        if f.docs > 1 and f.tokens > max_file_tokens:
            raise refuse(
                staging,
                staging / f.name,
                f"holds {f.tokens:,} tokens in {f.docs:,} documents, more than the recipe's "
                f"--max-file-tokens {max_file_tokens:,} allows",
            )
    for rec in state.sealed:
        names = tuple(c.name for c in rec.companions)
        if names != fmt.shard_files(rec.name)[1:]:
            raise _forged(staging, f"{rec.name} lists the further files {list(names)}")
    tokens, docs = sum(f.tokens for f in files), sum(f.docs for f in files)
    text = state.n_tokens - (state.n_docs if sep is not None else 0)
    if (tokens, docs, text) != (state.n_tokens, state.n_docs, state.text_tokens):
        raise refuse(
            staging,
            staging / "checkpoint.json",
            f"{split} totals ({state.n_tokens:,} tokens, {state.n_docs:,} docs, "
            f"{state.text_tokens:,} text tokens) disagree with its files ({tokens:,} tokens, "
            f"{docs:,} docs, {text:,} text tokens)",
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


def edge_docs(f: Shard, append: bool) -> tuple[int, int]:
    """The first and last documents' lengths (separator included) in a shard of exclusive
    separators, one per document (checked), placed as ``append`` says (checked)."""
    s = f.scan
    if append:
        first = s.head[0] + 1
        last = f.tokens - (s.tail[0] + 1) if len(s.tail) == 2 else f.tokens
    else:
        first = s.head[1] if len(s.head) == 2 else f.tokens
        last = f.tokens - s.tail[-1]
    return first, last


def check_cuts(
    staging: Path, files: list[Shard], sep: int | None, exclusive: bool, append: bool,
    max_file_tokens: int, fixed: bool = False,
) -> int | None:
    """A split's checked files (in order, with their scans): documents against separators,
    where the separators sit, and the cut rule from below (``fixed``: the fixed packing's,
    :func:`check_fixed_cuts`). Returns the length of the split's last document when the
    shards tell it (an exclusive separator), else None."""
    if fixed:
        return check_fixed_cuts(staging, files, sep, exclusive, append)
    last: int | None = None
    for k, f in enumerate(files):
        check_docs(staging, f.name, f.docs, f.scan.count, sep, exclusive)
        if k and f.docs == 0:
            raise refuse(staging, staging / f.name, "holds no documents after a sealed file, "
                         "but a file is sealed only when a document does not fit it")
        if sep is None or f.docs == 0:
            continue
        edge, where = (f.scan.last, "end") if append else (f.scan.first, "start")
        if edge != sep:
            raise refuse(staging, staging / f.name, f"does not {where} with the separator "
                         f"{sep}, as --sep-position {'append' if append else 'prepend'} puts it")
        if not exclusive:
            continue
        _check_lengths(staging, f, append)
        first, last = edge_docs(f, append)
        if k:
            _check_cut(staging, files[k - 1], f, first, max_file_tokens)
    return last


def _check_cut(staging: Path, before: Shard, f: Shard, first: int, max_file_tokens: int
               ) -> None:
    """``before`` was sealed because ``f``'s first document (``first`` tokens) would have
    taken it past ``max_file_tokens``."""
    if before.tokens + first <= max_file_tokens:
        raise refuse(
            staging,
            staging / before.name,
            f"was sealed at {before.tokens:,} tokens although the next document ({first:,} "
            f"tokens, the first of {f.name}) fits the recipe's --max-file-tokens "
            f"{max_file_tokens:,}: the files were cut by another rule",
        )


def check_source_cuts(staging: Path, cp: Checkpoint, lengths: dict[tuple[str, int], int]
                      ) -> int | None:
    """The cut rule from below, with the lengths of the documents :func:`wanted_docs`
    names, tokenized from the source (where the shards cannot tell documents apart).
    Returns the last train document's length when it was wanted, else None."""
    whole = cp.recipe.pack == "whole"  # fixed has no cut rule from below (check_fixed_cuts)
    for split, state in cp.splits.items() if whole else ():
        files, ordinal = shards_of(state), 0
        for before, f in itertools.pairwise(files):
            ordinal += before.docs
            first = lengths.get((split, ordinal))
            if first is not None:
                _check_cut(staging, before, f, first, cp.recipe.max_file_tokens)
    return lengths.get((_TRAIN, cp.splits[_TRAIN].n_docs - 1))


def _check_lengths(staging: Path, f: Shard, append: bool) -> None:
    """An open file's recorded document lengths (the index a format rebuilds from them)
    against where its exclusive separators are."""
    if f.lengths is None or f.scan.every is None:
        return
    held = separator_pieces(f, append)
    if held != f.lengths:
        pairs = zip(held, f.lengths, strict=False)
        k = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(held), len(f.lengths)))
        raise _forged(staging, f"its {f.name} document lengths disagree with the file's "
                      f"separators from document {k:,} on")


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


def check_finished(
    staging: Path, cp: Checkpoint, counts: ReplayCounts, stream_rows: int | None,
    last_train_doc: int | None,
) -> None:
    """A finished stream consumed every row (``stream_rows``, None when they cannot be
    counted), or stopped exactly at a budget: ``--max-documents`` rows, or the train
    document (the last row committed, ``last_train_doc`` tokens when known) that took the
    train split to ``--train-tokens``."""
    recipe, p = cp.recipe, cp.progress
    if not p.finished:
        return
    ends = [n for n in (stream_rows, recipe.max_documents) if n is not None]
    if stream_rows is not None and p.rows_visited == min(ends):
        return
    if stream_rows is None and p.rows_visited == recipe.max_documents:
        return
    budget, train = recipe.train_tokens, cp.splits[_TRAIN].n_tokens
    if budget is not None and train >= budget and counts.last_split == _TRAIN:
        if last_train_doc is None or train - last_train_doc < budget:
            return
        why = (f"train already held {train - last_train_doc:,} tokens before its last "
               f"document, past --train-tokens {budget:,}, so the stream stops earlier")
    else:
        total = "an uncounted number of" if stream_rows is None else f"{stream_rows:,}"
        why = (f"{p.rows_visited:,} of the stream's {total} rows were committed and no "
               "budget stops it there (" + _budgets(cp) + ")")
    raise _forged(staging, f"says the stream is finished, but {why}")


def _budgets(cp: Checkpoint) -> str:
    r, train = cp.recipe, cp.splits[_TRAIN].n_tokens
    docs = "none" if r.max_documents is None else f"{r.max_documents:,}"
    tokens = "none" if r.train_tokens is None else f"{r.train_tokens:,}"
    return f"--max-documents {docs}; --train-tokens {tokens}, train holds {train:,} tokens"

