"""A batch's ids, in a worker: tokenized (a document the tokenizer cannot encode becomes an
error at its place), checked against the vocabulary, and laid out per split when the batch
can be committed whole (:class:`Whole`); or, for a batch that must be visited row by row
(:class:`RowByRow`), one array per document ending with the error that stops it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import numpy.typing as npt

from prep.encoders import FlatEncoder
from prep.encoders.flatids import FlatIds, Unencodable
from prep.errors import InputError, PrepError
from prep.recipe import Recipe
from prep.state.identity import TokenizerIdentity
from prep.stream.order import Batch
from prep.stream.writer import Laid, lay_out_splits

Docs = list["npt.NDArray[Any] | PrepError"]  # one array per document; an error ends them
Ids = FlatIds | Docs  # a flat buffer, or per document arrays with an InputError last


@dataclass(frozen=True)
class Whole:
    """A batch committed whole: its documents laid out per split, in ``SPLITS`` order."""

    laid: tuple[Laid, ...]


@dataclass(frozen=True)
class RowByRow:
    """A batch whose rows are visited one at a time, with its documents' ``ids``."""

    ids: Ids


Payload = Whole | RowByRow  # what a worker sends for a batch, and the main process commits


def tokenize(encoder: FlatEncoder, batch: Batch) -> Ids:
    """The batch's ids; a document the tokenizer cannot encode becomes an ``InputError``
    after the ids of the documents before it."""
    utf8 = batch.doc_utf8()
    try:
        return encoder.encode_flat(batch.docs, utf8)
    except Exception:  # tokenizers raises a bare Exception: find the document
        out: Docs = []
        for k, (text, data) in enumerate(zip(batch.docs, utf8, strict=True)):
            try:
                out.extend(encoder.encode_flat([text], [data]).split())
            except Exception as e:
                path, row = batch.doc_where[k]
                why = str(e) if isinstance(e, Unencodable) else (
                    f"the tokenizer cannot encode this document ({e}); fix the tokenizer (for "
                    "example give its model an unk_token) or remove the row")
                out.append(InputError(f"{path} row {row}: {why}", path=path, row=row))
                break
        return out


def per_document(ids: Ids) -> Docs:
    """One id array per document (views into a flat buffer), as ``commit_batch`` takes."""
    return list(ids.split()) if isinstance(ids, FlatIds) else ids


def in_vocabulary(ids: Ids, batch: Batch, vocab_size: int) -> Ids:
    """``ids`` when every id is below ``vocab_size``, checked here, in the worker (and
    before they are narrowed to uint16, which would hide an id past 65,535); otherwise one
    array per document up to the first document holding an id outside the vocabulary, then
    that document's ``InputError`` naming its file and row, so that the batch is committed
    row by row and stops there."""
    docs: Docs = per_document(ids)
    if isinstance(ids, FlatIds):
        if ids.ids.size == 0 or int(ids.ids.max()) < vocab_size:
            return ids
    elif all(isinstance(d, PrepError) or d.size == 0 or int(d.max()) < vocab_size
             for d in docs):
        return ids
    for k, doc in enumerate(docs):
        if isinstance(doc, PrepError):
            break
        if doc.size and int(doc.max()) >= vocab_size:
            path, row = batch.doc_where[k]
            return [*docs[:k], InputError(
                f"{path} row {row}: token id {int(doc.max()):,} is outside the vocabulary "
                f"[0, {vocab_size:,}); the tokenizer and --doc-sep-id must agree with the "
                "vocabulary size", path=path, row=row)]
    return ids


def laid_or_ids(batch: Batch, ids: Ids, identity: TokenizerIdentity, recipe: Recipe
                ) -> Payload:
    """What the committing process appends for a tokenized batch: its documents laid out
    per split with their separators (each with the SHA-256 of its ids, in the dtype they
    came in: the shards'), or the ids themselves, committed row by row, for a
    batch whose rows must be visited one at a time: one holding an error row or a document
    the tokenizer cannot encode (raised at its place), one under ``--train-tokens`` (the
    budget stops mid-batch), or one with a document too long for any file (named at its
    place)."""
    if not isinstance(ids, FlatIds) or batch.errors or recipe.train_tokens is not None:
        return RowByRow(ids)
    laid = lay_out_splits(ids.ids, ids.offsets, batch.doc_splits, batch.doc_sizes,
                          identity.doc_sep_id, recipe.sep_position == "append")
    if laid is None:
        return RowByRow(ids)
    # Hashed here, in parallel: the segment each one becomes (prep.formats.segments).
    return Whole(tuple(replace(one, digest=hashlib.sha256(one.ids.data).digest())
                       for one in laid))
