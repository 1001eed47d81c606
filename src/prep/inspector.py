"""``prep inspect PATH``: a ``.bin`` file's header and first ids, a dataset's manifest
summary, or a staging directory's checkpoint progress. Read-only; returns text lines.

(Not named ``inspect``: that would shadow the standard library module.)
"""

from __future__ import annotations

import time
from pathlib import Path

from prep.errors import InputError
from prep.formats import ShardFormat, get_format
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME, read_manifest


def inspect_shard(
    path: Path, first: int, tokenizer: str | None, fmt: ShardFormat, dtype: str | None
) -> list[str]:
    line, ids = fmt.describe(path, dtype)
    head = [int(i) for i in ids[:first]]
    lines = [line, f"first {len(head)} ids: {head}"]
    if tokenizer and tokenizer != "byte":
        from tokenizers import Tokenizer

        json_path = Path(tokenizer) / "tokenizer.json" if Path(tokenizer).is_dir() else tokenizer
        try:
            tok = Tokenizer.from_file(str(json_path))
        except Exception as e:  # tokenizers raises a bare Exception
            raise InputError(
                f"--tokenizer {tokenizer}: cannot load a tokenizer.json ({e}); give the file "
                "the dataset was made with, or `byte`",
                path=str(json_path),
            ) from e
        lines.append(f"decoded: {tok.decode(head, skip_special_tokens=False)!r}")
    elif tokenizer == "byte":
        lines.append(f"decoded: {bytes(i for i in head if i < 256).decode('utf-8', 'replace')!r}")
    return lines


def inspect_manifest(directory: Path) -> list[str]:
    m = read_manifest(directory)
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
    beta = m.val_bytes_per_token
    lines.append(f"val bytes per token: {beta:.4f}" if beta else "val bytes per token: n/a")
    return lines


def inspect_staging(directory: Path) -> list[str]:
    cp = ckpt.load(directory)
    age = time.time() - cp.written_at
    p = cp.progress
    lines = [
        f"staging {directory}: {'finished, ready to seal' if p.finished else 'in progress'}; "
        f"checkpoint written {age:,.0f} s ago",
        f"rows visited {p.rows_visited:,}, documents {p.docs_written:,}, empty skipped "
        f"{p.empty_rows_skipped:,}; resumes so far {cp.run.resumes}",
    ]
    for split, s in cp.splits.items():
        files = len(s.sealed) + (1 if s.open else 0)
        lines.append(
            f"{split}: {s.n_tokens:,} tokens, {s.n_docs:,} docs, {files} files "
            f"({len(s.sealed)} sealed)"
        )
    return lines


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


def inspect_path(path: Path, *, first: int = 16, tokenizer: str | None = None) -> list[str]:
    """Describe ``path``; raises ``InputError`` when it is none of the known kinds."""
    fmt, dtype = _format_near(path.parent)
    if path.is_file() and fmt.owns_file(path.name):
        return inspect_shard(path, first, tokenizer, fmt, dtype)
    if path.is_file() and path.name == MANIFEST_NAME:
        return inspect_manifest(path.parent)
    if path.is_dir() and (path / ckpt.CHECKPOINT_NAME).exists():
        return inspect_staging(path)
    if path.is_dir() and (path / MANIFEST_NAME).exists():
        return inspect_manifest(path)
    raise InputError(
        f"{path}: not a .bin file, a dataset directory (with {MANIFEST_NAME}) or a staging "
        "directory (with checkpoint.json)",
        path=path,
    )
