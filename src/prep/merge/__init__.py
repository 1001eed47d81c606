"""``prep merge DIR``: join the published parts in ``DIR.parts/`` into one dataset ``DIR``.

Under ``DIR``'s lock: find parts ``0..N-1`` (refusing a missing or unfinished one), verify
each (every file re-hashed, parts in parallel), plan the merge (:mod:`prep.merge.plan`),
then build ``DIR.merging/`` from hard links to the parts' files — token data is never
copied — with the merged ``_MANIFEST.json`` and ``_PROVENANCE.json``, and rename it to
``DIR`` (never replacing one). A refusal publishes nothing. Killed at any instant, a rerun
builds the staging again (it holds only links and two small files) or finds ``DIR``
published and reports it complete.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from prep.errors import IntegrityError, Interrupted, OutputError
from prep.formats import get_format
from prep.fsio import fsync_dir, rename_noreplace
from prep.merge.plan import MergePlan, PartManifest, plan_merge
from prep.outputs import resolve_output
from prep.partition import Part, parts_root
from prep.state.manifest import MANIFEST_NAME, Manifest, read_manifest, write_manifest
from prep.state.provenance import MergeProvenance, read_provenance_json, write_provenance
from prep.verify import verify_dataset

logger = logging.getLogger(__name__)

_PART_DIR = re.compile(r"^(\d+)-of-(\d+)(\.incomplete)?$")


@dataclass(frozen=True)
class MergeOutcome:
    status: str  # "published" or "already-complete"
    out: Path
    manifest: Manifest
    seconds: float


def merging_dir(out: Path) -> Path:
    """``DIR.merging``: where a merge is assembled before it is renamed to ``DIR``."""
    return out.with_name(out.name + ".merging")


def find_parts(out: Path) -> list[Path]:
    """The published parts ``DIR.parts/I-of-N``, ``I = 0..N-1``. Raises ``IntegrityError``
    naming every missing or unfinished part, or when parts of two different ``N`` exist."""
    root = parts_root(out)
    found: dict[int, dict[int, bool]] = {}  # count -> index -> published
    if root.is_dir():
        for entry in root.iterdir():
            m = _PART_DIR.match(entry.name)
            if m and entry.is_dir():
                done = found.setdefault(int(m.group(2)), {})
                index = int(m.group(1))
                done[index] = done.get(index, False) or m.group(3) is None
    if not found:
        raise IntegrityError(
            f"no parts in {root}: run prep prepare --part I/N --out {out} for I = 0..N-1 first",
            path=root,
        )
    if len(found) > 1:
        names = ", ".join(f"*-of-{n}" for n in sorted(found))
        raise IntegrityError(
            f"{root} holds parts of different runs ({names}); remove the stale ones", path=root
        )
    count, done = next(iter(found.items()))
    missing = [Part(i, count) for i in range(count) if i not in done]
    unfinished = [Part(i, count) for i in range(count) if done.get(i) is False]
    if missing or unfinished:
        said = []
        if missing:
            said.append("missing: " + ", ".join(p.name for p in missing))
        if unfinished:
            said.append("unfinished (still staging): " + ", ".join(p.name for p in unfinished))
        first = (missing or unfinished)[0]
        raise IntegrityError(
            f"cannot merge {out}: parts {'; '.join(said)}. Run or resume them (prep prepare "
            f"--part {first.index}/{count} --out {out} --resume ...), then merge again",
            path=root,
        )
    return [root / Part(i, count).name for i in range(count)]


def _load_part(path: Path) -> PartManifest:
    """A part's manifest after ``verify`` passes on it; ``IntegrityError`` otherwise."""
    problems = verify_dataset(path)
    if problems:
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise IntegrityError(
            f"part {path.name} does not verify: {'; '.join(problems[:3])}{more}. Delete "
            f"{path} and run that part again",
            path=path,
        )
    raw = (path / MANIFEST_NAME).read_bytes()
    return PartManifest(path.name, read_manifest(path), hashlib.sha256(raw).hexdigest())


def _already_published(out: Path, plan: MergePlan) -> bool:
    """True when ``DIR`` holds this very merge; ``OutputError`` when it holds anything else."""
    if not out.exists():
        return False
    try:
        same = (out / MANIFEST_NAME).read_bytes() == plan.manifest.to_bytes()
    except OSError:
        same = False
    if not same:
        raise OutputError(
            f"{out} already exists and is not this merge of {parts_root(out)}; it was not "
            "replaced: move it away first",
            path=out,
        )
    return True


def _build(out: Path, plan: MergePlan, provenance: MergeProvenance) -> None:
    staging = merging_dir(out)
    if staging.exists():
        shutil.rmtree(staging)  # a killed merge: it held only links and small files
    staging.mkdir()
    root = parts_root(out)
    for link in plan.links:
        os.link(root / link.part / link.name, staging / link.new_name)
    write_provenance(staging, provenance)
    write_manifest(staging, plan.manifest)
    fsync_dir(staging)
    rename_noreplace(staging, out)
    fsync_dir(out.parent)


def _never() -> bool:
    return False


def merge(
    out: Path, *, wait_lock: float = 0.0, threads: int | None = None,
    argv: list[str] | None = None, stop: Callable[[], bool] = _never,
) -> MergeOutcome:
    """Verify the parts of ``out`` and publish their merge as ``out``.

    Raises ``IntegrityError`` (a missing, unfinished, tampered or mismatched part; nothing
    published), ``OutputError`` (``out`` exists and is something else, or a single run's
    staging is in the way), ``LockedError`` (another run or merge holds the lock),
    ``Interrupted`` when ``stop()`` says so before the lock or before publishing (nothing
    published; a rerun merges again)."""
    t0 = time.monotonic()
    output = resolve_output(out)
    out = Path(os.path.abspath(out))
    with output.hold_lock(wait_lock, stop):
        if output.staging.exists():
            raise OutputError(
                f"{output.staging} is a single run's staging for {out}; finish it or remove "
                "it before merging parts into the same directory",
                path=output.staging,
            )
        part_dirs = find_parts(out)
        logger.info("verifying %d parts in %s", len(part_dirs), parts_root(out))
        with ThreadPoolExecutor(threads or os.cpu_count() or 1) as pool:  # hashing frees the GIL
            parts = list(pool.map(_load_part, part_dirs))
        first = parts[0].manifest  # plan_merge checks the others share its format
        plan = plan_merge(parts, get_format(first.format, first.dtype))
        if _already_published(out, plan):
            shutil.rmtree(merging_dir(out), ignore_errors=True)
            logger.info("%s is already this merge; nothing to do", out)
            return MergeOutcome("already-complete", out, plan.manifest, time.monotonic() - t0)
        if stop():  # after the verification, the long part; building is links only
            raise Interrupted(
                f"stopped on request after verifying the parts; {out} was not published. "
                "Rerun the same command",
                path=out,
            )
        provenance = MergeProvenance(
            merged_at=time.time(),
            merge_seconds=time.monotonic() - t0,
            argv=argv,
            parts={p.name: read_provenance_json(p) for p in part_dirs},
        )
        _build(out, plan, provenance)
        logger.info(
            "published %s from %d parts: %d files linked, none copied",
            out, len(parts), len(plan.links),
        )
        return MergeOutcome("published", out, plan.manifest, time.monotonic() - t0)
