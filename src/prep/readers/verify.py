"""``prep verify DIR``: re-check a published dataset against its manifest, reading only.

Checks every shard through its output format (header, size, ids against V, SHA-256,
separators), the manifest's counts, the shards' naming and order rules, and conservation
(sums of shards equal the split totals). The dataset may be anywhere an output can be
(:mod:`prep.outputs`): a bucket's shards are copied to a temporary directory one at a time
and checked there; a prefix without its manifest is reported incomplete, never read.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from prep.errors import IntegrityError, UsageError
from prep.formats import ShardFormat, get_format
from prep.outputs import Readable, published_at
from prep.split import SPLITS
from prep.state.manifest import Manifest, ManifestFile
from prep.state.shards import first_doc_fits


def _split_problems(
    split: str, entries: list[ManifestFile], manifest: Manifest, fmt: ShardFormat
) -> list[str]:
    problems = []
    entries = sorted(entries, key=lambda e: e.name)
    names = [e.name for e in entries]
    expected = [fmt.shard_name(split, i) for i in range(len(entries))]
    if names != expected:
        problems.append(
            f"{split}: files {names} are not {fmt.shard_name(split, 0)} onwards without gaps"
        )
    for a, b in itertools.pairwise(entries):
        if a.n_tokens == 0 and b.n_tokens > 0:
            problems.append(f"{split}: empty {a.name} precedes non-empty {b.name}")
    total = manifest.totals.get(split)
    for key in ("n_tokens", "n_docs"):
        got = sum(getattr(e, key) for e in entries)
        want = getattr(total, key) if total else None
        if got != want:
            problems.append(f"{split}: files hold {got:,} {key[2:]} but totals say {want}")
    n_files = total.n_files if total else None
    if len(entries) != n_files:
        problems.append(f"{split}: {len(entries)} files but totals say {n_files}")
    return problems + pack_problems(entries, manifest)


def pack_problems(entries: list[ManifestFile], manifest: Manifest) -> list[str]:
    """A split's files (in order) against the manifest's ``--pack``: under ``fixed``, each
    file but the last holds exactly ``max_file_tokens`` ids and records ``first_doc_at``,
    at most its size, 0 in the first file, its size exactly when no document starts in it;
    under ``whole`` no file records it."""
    fixed, problems = manifest.pack == "fixed", []
    for k, e in enumerate(entries):
        first = e.first_doc_at
        if not fixed:
            if first is not None:
                problems.append(f"{e.name}: first_doc_at {first} in a --pack whole dataset")
            continue
        if k < len(entries) - 1 and e.n_tokens != manifest.max_file_tokens:
            problems.append(f"{e.name}: {e.n_tokens:,} ids, not --max-file-tokens "
                            f"{manifest.max_file_tokens:,} (--pack fixed, not the last file)")
        if first is None:
            problems.append(f"{e.name}: no first_doc_at in a --pack fixed dataset")
        elif not first_doc_fits(first, e.n_tokens, e.n_docs, k == 0):
            problems.append(f"{e.name}: first_doc_at {first:,} does not fit its "
                            f"{e.n_tokens:,} ids and {e.n_docs:,} documents starting in it")
    return problems


def llmc_batch_problems(manifest: Manifest, batch: int, seq_len: int) -> list[str]:
    """Shards llm.c's DataLoader refuses at start-up for batch ``batch`` x ``seq_len``: it
    asserts that every shard of the glob holds at least ``B*T+1`` tokens (``P*B*T+1`` with P
    processes). Each line says how to fix it."""
    need = batch * seq_len + 1
    problems = []
    for entry in sorted(manifest.files, key=lambda e: e.name):
        if entry.n_tokens >= need:
            continue
        total = manifest.totals[entry.split].n_tokens
        if total >= need and total <= 2**31 - 1:
            fix = (
                f"rebuild with --max-file-tokens {total:,} (the whole {entry.split} split in "
                f"one file), or use a smaller B*T"
            )
        else:
            bigger = "a larger val split (--val-fraction)" if entry.split == "val" else "more data"
            fix = (
                f"the whole {entry.split} split holds only {total:,} tokens: use {bigger}, or "
                "a smaller B*T"
            )
        problems.append(
            f"{entry.name}: {entry.n_tokens:,} tokens, fewer than the B*T+1 = {need:,} that "
            f"llm.c's DataLoader asserts for every shard (-b {batch} -t {seq_len}; with P "
            f"processes it needs P*B*T+1); {fix}"
        )
    return problems


def verify_dataset(
    directory: Path, *, check_extra: bool = True, llmc_batch: tuple[int, int] | None = None
) -> list[str]:
    """Every problem of the dataset in ``directory``, one line each (empty when it
    verifies). With ``llmc_batch=(B, T)`` also the shards llm.c would reject for that
    batch."""
    return verify_output(published_at(directory), check_extra=check_extra,
                         llmc_batch=llmc_batch)


def verify_output(
    out: Readable, *, check_extra: bool = True, llmc_batch: tuple[int, int] | None = None
) -> list[str]:
    """:func:`verify_dataset` of the dataset published at ``out``."""
    try:
        manifest = out.published_manifest()
    except IntegrityError as e:
        return [str(e)]
    try:
        fmt = get_format(manifest.format, manifest.dtype)
    except UsageError as e:
        return [f"manifest: {e}"]
    problems: list[str] = []
    by_split: dict[str, list[ManifestFile]] = {s: [] for s in SPLITS}
    for entry in manifest.files:
        parsed = fmt.parse_name(entry.name)
        if parsed is None or parsed[0] != entry.split:
            problems.append(f"manifest: bad file entry {entry.name!r}")
            continue
        by_split[parsed[0]].append(entry)
        with out.reading(dict.fromkeys(fmt.shard_files(entry.name))) as directory:
            problems += fmt.check_shard(directory, entry, manifest)
    for split in SPLITS:
        problems += _split_problems(split, by_split[split], manifest, fmt)
    if check_extra:
        listed = {f for e in manifest.files for f in fmt.shard_files(e.name)}
        for name in out.published_names():
            if fmt.owns_file(name) and name not in listed:
                problems.append(f"{name}: not listed in the manifest")
    if llmc_batch is not None:
        problems += llmc_batch_problems(manifest, *llmc_batch)
    return problems
