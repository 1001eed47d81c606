"""``prep verify DIR``: re-check a published dataset against its manifest, reading only.

Checks every file's header, size, ids against V and SHA-256, the manifest's counts, the
files' naming and order rules, and conservation (sums of files equal the split totals;
separators where the manifest says they are).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np

from prep.binfile import HEADER_BYTES, read_header
from prep.errors import FormatError, IntegrityError
from prep.fsio import file_sha256
from prep.manifest import read_manifest
from prep.split import SPLITS

_NAME = re.compile(r"^(train|val)-(\d{5})\.bin$")
_CHUNK = 1 << 22


def _scan_ids(path: Path, n: int, dtype: Any, vocab_size: int, sep: int | None) -> tuple[int, int]:
    """Stream a file's ids: (max id, separator count), in bounded memory."""
    ids = np.memmap(path, dtype=dtype, mode="r", offset=HEADER_BYTES, shape=(n,))
    top, seps = -1, 0
    for start in range(0, n, _CHUNK):
        chunk = ids[start : start + _CHUNK]
        top = max(top, int(chunk.max()))
        if sep is not None:
            seps += int(np.count_nonzero(chunk == sep))
    return top, seps


def _check_file(directory: Path, entry: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    name = entry["name"]
    path = directory / name
    if not path.is_file():
        return [f"{name}: missing"]
    try:
        header = read_header(path)
    except FormatError as e:
        return [str(e)]
    problems = []
    if header.n != entry["n_tokens"]:
        problems.append(
            f"{name}: header n = {header.n:,} but manifest n_tokens = {entry['n_tokens']:,}"
        )
    if header.version != manifest["bin_version"]:
        problems.append(
            f"{name}: version {header.version} but manifest bin_version {manifest['bin_version']}"
        )
    if header.vocab_size != manifest["vocab_size"]:
        problems.append(
            f"{name}: header vocab_size {header.vocab_size:,} but manifest "
            f"{manifest['vocab_size']:,}"
        )
    sha = file_sha256(path)
    if sha != entry["sha256"]:
        problems.append(
            f"{name}: SHA-256 {sha[:12]}… does not match the manifest's {entry['sha256'][:12]}…"
        )
    if header.n:
        sep = manifest["doc_sep_id"]
        top, seps = _scan_ids(path, header.n, header.dtype, manifest["vocab_size"], sep)
        if top >= manifest["vocab_size"]:
            problems.append(
                f"{name}: id {top:,} is outside the vocabulary ({manifest['vocab_size']:,})"
            )
        if sep is not None and seps < entry["n_docs"]:
            problems.append(f"{name}: {seps:,} separators for {entry['n_docs']:,} documents")
        ids = np.memmap(path, dtype=header.dtype, mode="r", offset=HEADER_BYTES, shape=(header.n,))
        edge = int(ids[0]) if manifest["sep_position"] == "prepend" else int(ids[-1])
        if sep is not None and edge != sep:
            where = "start" if manifest["sep_position"] == "prepend" else "end"
            problems.append(f"{name}: does not {where} with the separator {sep}")
    return problems


def verify_dataset(directory: Path, *, check_extra: bool = True) -> list[str]:
    """Every problem found, one line each (empty when the dataset verifies)."""
    try:
        manifest = read_manifest(directory)
    except IntegrityError as e:
        return [str(e)]
    problems: list[str] = []
    files = manifest.get("files", [])
    by_split: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for entry in files:
        m = _NAME.match(entry.get("name", ""))
        if not m or m.group(1) != entry.get("split"):
            problems.append(f"manifest: bad file entry {entry.get('name')!r}")
            continue
        by_split[m.group(1)].append(entry)
        problems += _check_file(directory, entry, manifest)
    for split in SPLITS:
        entries = sorted(by_split[split], key=lambda e: e["name"])
        names = [e["name"] for e in entries]
        expected = [f"{split}-{i:05d}.bin" for i in range(len(entries))]
        if names != expected:
            problems.append(
                f"{split}: files {names} are not {split}-00000.bin onwards without gaps"
            )
        for a, b in itertools.pairwise(entries):
            if a["n_tokens"] == 0 and b["n_tokens"] > 0:
                problems.append(f"{split}: empty {a['name']} precedes non-empty {b['name']}")
        total = manifest.get("totals", {}).get(split, {})
        for key in ("n_tokens", "n_docs"):
            got = sum(e[key] for e in entries)
            if got != total.get(key):
                problems.append(
                    f"{split}: files hold {got:,} {key[2:]} but totals say {total.get(key)}"
                )
        if len(entries) != total.get("n_files"):
            problems.append(f"{split}: {len(entries)} files but totals say {total.get('n_files')}")
    if check_extra:
        listed = {e.get("name") for e in files}
        for p in sorted(directory.glob("*.bin")):
            if p.name not in listed:
                problems.append(f"{p.name}: not listed in the manifest")
    return problems
