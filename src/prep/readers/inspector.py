"""``prep inspect PATH``: a ``.bin`` file's header and first ids, a dataset's manifest
summary, or a staging directory's checkpoint progress. Read-only; returns text lines.

(Not named ``inspect``: that would shadow the standard library module.)
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy.typing as npt

from prep.errors import InputError, IntegrityError, PrepError
from prep.formats import ShardFormat, get_format
from prep.fsio import file_sha256
from prep.outputs import (
    Readable,
    is_uri,
    lock_holder,
    output_of_staging,
    published_at,
    resolve_output,
)
from prep.split import SPLITS
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME, Manifest, read_manifest


def inspect_shard(
    path: Path, first: int, tokenizer: str | None, fmt: ShardFormat, dtype: str | None
) -> list[str]:
    line, ids = fmt.describe(path, dtype)
    head = [int(i) for i in ids[:first]]
    lines = [line, f"first {len(head)} ids: {head}"]
    if tokenizer is None:
        return lines
    decoder = _decoder(tokenizer)
    lines += [f"warning: {w}" for w in decoder.mismatches(path, ids)]
    lines.append(f"decoded: {decoder.decode(head)!r}")
    return lines


@dataclass(frozen=True)
class _Decoder:
    """A tokenizer given to ``inspect --tokenizer``: its size, its file, how it decodes."""

    spec: str
    vocab_size: int
    json_path: Path | None  # None: the byte tokenizer
    decode: Callable[[list[int]], str]

    def mismatches(self, shard: Path, ids: npt.NDArray[Any]) -> list[str]:
        """Why the decoded text may be wrong: the dataset beside the file was made with a
        tokenizer of another vocabulary or another tokenizer.json; or, for a file alone,
        it holds ids the tokenizer does not have."""
        try:
            m = read_manifest(shard.parent)
        except (OSError, PrepError):
            m = None
        if m is None:
            top = int(ids.max()) if ids.size else -1
            return [
                f"{shard.name} holds id {top:,}; --tokenizer {self.spec} has only "
                f"{self.vocab_size:,}: the decoded text is wrong; give the tokenizer the "
                "file was made with"
            ] if top >= self.vocab_size else []
        if m.vocab_size != self.vocab_size:
            return [
                f"{shard.name} was written for a vocabulary of {m.vocab_size:,} ids; "
                f"--tokenizer {self.spec} has {self.vocab_size:,}: the decoded text is "
                "probably wrong; give the tokenizer the dataset was made with"
            ]
        if self.json_path and m.tokenizer_sha256 != file_sha256(self.json_path):
            return [
                f"{shard.parent / MANIFEST_NAME} records another tokenizer.json "
                f"(SHA-256 {m.tokenizer_sha256[:12]}...) than {self.json_path}"
            ]
        return []


def _decoder(spec: str) -> _Decoder:
    if spec == "byte":
        return _Decoder(spec, 256, None,
                        lambda ids: bytes(i for i in ids if i < 256).decode("utf-8", "replace"))
    from tokenizers import Tokenizer

    json_path = Path(spec) / "tokenizer.json" if Path(spec).is_dir() else Path(spec)
    try:
        tok = Tokenizer.from_file(str(json_path))
    except Exception as e:  # tokenizers raises a bare Exception
        raise InputError(
            f"--tokenizer {spec}: cannot load a tokenizer.json ({e}); give the file "
            "the dataset was made with, or `byte`",
            path=str(json_path),
        ) from e
    size = max(tok.get_vocab(with_added_tokens=True).values(), default=-1) + 1
    return _Decoder(spec, size, json_path,
                    lambda ids: str(tok.decode(ids, skip_special_tokens=False)))


def inspect_manifest(directory: Path) -> list[str]:
    return describe_manifest(read_manifest(directory))


def describe_manifest(m: Manifest) -> list[str]:
    src = m.source
    lines = [
        f"dataset {m.dataset}: tokenizer {m.tokenizer_id} (V = {m.vocab_size:,}, "
        f"separator {m.doc_sep_id} {m.sep_position}), format {m.format} ({m.dtype} ids, "
        f"version {m.bin_version})",
        f"source {src.uri}: {len(src.files)} files, {src.rows_visited:,} rows visited, "
        f"{src.empty_rows_skipped:,} empty skipped",
    ]
    for split, t in m.totals.items():
        lines.append(f"{split}: {t.n_tokens:,} tokens, {t.n_docs:,} docs, {t.n_files} files")
    lines.append(packing_line(m))
    beta = m.val_bytes_per_token
    lines.append(f"val bytes per token: {beta:.4f}" if beta else "val bytes per token: n/a")
    return lines


def packing_line(m: Manifest, shown: int = 6) -> str:
    """How the files are cut (``--pack``), and under ``fixed`` where the first document
    starting in each of the first ``shown`` files starts."""
    if m.pack != "fixed":
        return f"packing whole: files of at most {m.max_file_tokens:,} ids, whole documents"
    files = sorted(m.files, key=lambda e: e.name)
    at = ", ".join(f"{e.name} {e.first_doc:,}" for e in files[:shown])
    more = f", … ({len(files) - shown} more)" if len(files) > shown else ""
    return (f"packing fixed: every file but a split's last holds {m.max_file_tokens:,} ids, "
            f"documents run on across files; first document at: {at}{more}")


def inspect_staging(directory: Path) -> list[str]:
    cp = ckpt.load(directory)
    age = time.time() - cp.written_at
    p = cp.progress
    out = output_of_staging(directory)  # absolute: the printed command works from anywhere
    holder = lock_holder(out.lock_paths)
    state = "finished, ready to publish" if p.finished else "in progress"
    if holder is None:
        state += ", not running (the lock is free: the run stopped or was killed)"
    else:
        state += f", running ({holder})"
    lines = [
        f"staging {directory}: {state}; checkpoint written {age:,.0f} s ago",
        f"rows visited {p.rows_visited:,}, documents {p.docs_written:,}, empty skipped "
        f"{p.empty_rows_skipped:,}; resumes so far {cp.run.resumes}",
    ]
    for split, s in cp.splits.items():
        files = len(s.sealed) + (1 if s.open else 0)
        lines.append(
            f"{split}: {s.n_tokens:,} tokens, {s.n_docs:,} docs, {files} files "
            f"({len(s.sealed)} sealed)"
        )
    if holder is None:
        why = out.resume_why()
        lines.append(f"resume with: prep prepare {shlex.join(out.resume_args())} --resume"
                     + (f" ({why})" if why else ""))
    return lines


def _marked(directory: Path) -> bool:
    """Whether ``directory`` is a dataset (its manifest) or a staging (its checkpoint)."""
    return (directory / MANIFEST_NAME).is_file() or (directory / ckpt.CHECKPOINT_NAME).is_file()


def _format_near(directory: Path) -> tuple[ShardFormat, str | None]:
    """The format (and id dtype) of the shards in ``directory``: its manifest's, its
    checkpoint's, or the default (whose header says the dtype)."""
    if (directory / MANIFEST_NAME).is_file():
        m = read_manifest(directory)
        return get_format(m.format, m.dtype), m.dtype
    if (directory / ckpt.CHECKPOINT_NAME).is_file():
        cp = ckpt.load(directory)
        fmt = get_format(cp.recipe.format, cp.recipe.dtype)
        return fmt, fmt.dtype_name(cp.tokenizer.vocab_size)
    return get_format(), None


def _published_around(parent: str, name: str) -> tuple[Readable, Manifest, str] | None:
    """The dataset that holds the object ``parent/name``, its manifest and the object's
    name in it: ``parent`` itself, or the one above it when ``parent`` is a format's split
    folder (``DATASET/train``); None when neither is a published dataset."""
    dataset = published_at(parent)
    try:
        return dataset, dataset.published_manifest(), name
    except IntegrityError:
        pass
    up, _, folder = parent.rpartition("/")
    if folder not in SPLITS:
        return None
    try:
        dataset = published_at(up)
        return dataset, dataset.published_manifest(), f"{folder}/{name}"
    except PrepError:  # not a dataset's split folder after all
        return None


def inspect_published(location: str, *, first: int = 16, tokenizer: str | None = None
                      ) -> list[str]:
    """Describe a dataset published at ``location`` (a bucket URI), or one of its files:
    its manifest, or a shard copied to a temporary directory with the manifest beside it.
    Raises ``IntegrityError`` for a prefix without its manifest (incomplete: never read as
    a dataset)."""
    parent, _, name = location.rstrip("/").rpartition("/")
    if name == MANIFEST_NAME:  # the manifest object names its dataset, as a local one does
        location, (parent, _, name) = parent, parent.rpartition("/")
    out = published_at(location)
    if not name or "/" not in parent.partition("://")[2]:
        return describe_manifest(out.published_manifest())
    found = _published_around(parent, name)
    if found is None:
        return describe_manifest(out.published_manifest())  # a dataset, or why it is none
    dataset, m, name = found
    fmt = get_format(m.format, m.dtype)
    if not fmt.owns_file(name):
        return describe_manifest(out.published_manifest())
    with dataset.reading({name: None, MANIFEST_NAME: None}) as directory:
        if not (directory / name).is_file():
            raise InputError(f"{location}: no such object in {parent}", path=location)
        return inspect_shard(directory / name, first, tokenizer, fmt, m.dtype)


def inspect_path(path: Path | str, *, first: int = 16, tokenizer: str | None = None
                 ) -> list[str]:
    """Describe ``path`` (a local path, or a bucket URI: :func:`inspect_published`);
    raises ``InputError`` when it is none of the known kinds."""
    if is_uri(path):
        return inspect_published(path, first=first, tokenizer=tokenizer)
    path = Path(path)
    root, name = path.parent, path.name
    if not _marked(root) and _marked(root.parent):  # a file in a format's split folder
        root, name = root.parent, f"{root.name}/{path.name}"
    fmt, dtype = _format_near(root)
    if path.is_file() and fmt.owns_file(name):
        return inspect_shard(path, first, tokenizer, fmt, dtype)
    if path.is_file() and path.name == MANIFEST_NAME:
        return inspect_manifest(path.parent)
    if path.is_dir() and (path / ckpt.CHECKPOINT_NAME).exists():
        return inspect_staging(path)
    if path.is_dir() and (path / MANIFEST_NAME).exists():
        return inspect_manifest(path)
    inside = resolve_output(path).staging  # a mount point --out: staging is inside it
    if path.is_dir() and (inside / ckpt.CHECKPOINT_NAME).exists():
        return inspect_staging(inside)
    raise InputError(
        f"{path}: not a .bin file, a dataset directory (with {MANIFEST_NAME}) or a staging "
        "directory (with checkpoint.json)",
        path=path,
    )
