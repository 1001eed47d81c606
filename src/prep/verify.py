"""``prep verify DIR``: re-check a published dataset against its manifest, reading only.

Checks every shard through its output format (header, size, ids against V, SHA-256,
separators), the manifest's counts, the shards' naming and order rules, and conservation
(sums of shards equal the split totals).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from prep.errors import IntegrityError
from prep.formats import ShardFormat, get_format
from prep.split import SPLITS
from prep.state.manifest import Manifest, ManifestFile, read_manifest


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
    return problems


def verify_dataset(directory: Path, *, check_extra: bool = True) -> list[str]:
    """Every problem found, one line each (empty when the dataset verifies)."""
    try:
        manifest = read_manifest(directory)
    except IntegrityError as e:
        return [str(e)]
    fmt = get_format()
    problems: list[str] = []
    by_split: dict[str, list[ManifestFile]] = {s: [] for s in SPLITS}
    for entry in manifest.files:
        parsed = fmt.parse_name(entry.name)
        if parsed is None or parsed[0] != entry.split:
            problems.append(f"manifest: bad file entry {entry.name!r}")
            continue
        by_split[parsed[0]].append(entry)
        problems += fmt.check_shard(directory, entry, manifest)
    for split in SPLITS:
        problems += _split_problems(split, by_split[split], manifest, fmt)
    if check_extra:
        listed = {f for e in manifest.files for f in fmt.shard_files(e.name)}
        for p in sorted(directory.iterdir()):
            if fmt.owns_file(p.name) and p.name not in listed:
                problems.append(f"{p.name}: not listed in the manifest")
    return problems
