"""``prep merge DIR``: join the published parts in ``DIR.parts/`` into one dataset ``DIR``.

Under ``DIR``'s lock: find parts ``0..N-1`` (refusing a missing or unfinished one), check
each (:meth:`prep.outputs.Parted.check_for_merge`: a local part verified, every file
re-hashed, parts in parallel; a part in a bucket by listing), plan the merge
(:mod:`prep.merge.plan`; parts packed ``--pack fixed`` first have their files cut again,
:mod:`prep.merge.recut`), then publish it through the output
(:meth:`~prep.outputs.Parted.publish_merge`): a directory is built as ``DIR.merging/``
from hard links to the parts' files, the merged ``_MANIFEST.json`` and
``_PROVENANCE.json``, and renamed to ``DIR`` (never replacing one); a bucket gets
server-side copies, the manifest last. Token data never passes through this process, but
for the files of ``--pack fixed`` parts written anew (locally, then uploaded to a bucket or
the Hub, from copies of only the part files they are cut from). A
refusal publishes nothing. Killed at any instant, a rerun builds it again or finds ``DIR``
published and reports it complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prep.errors import IntegrityError, Interrupted, OutputError, never
from prep.formats import get_format
from prep.merge.plan import RECUT, MergePlan, PartManifest, Recut, check_compatible, plan_merge
from prep.merge.recut import files_to_recut, recut
from prep.outputs import ABSENT, DATASET, LocalDir, Output, Parted, resolve_output
from prep.partition import PART_DIR, PARTS_SUFFIX, Part
from prep.readers.verify import verify_output
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, Manifest, parse_manifest
from prep.state.provenance import MergeProvenance, provenance_bytes, read_provenance_json

if TYPE_CHECKING:
    from prep.outputs.hf.output import HubSettings

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class MergeOutcome:
    status: str  # "published" or "already-complete"
    out: Path | str
    manifest: Manifest
    seconds: float


def find_parts(out: Parted) -> list[str]:
    """The names of the published parts ``I-of-N``, ``I = 0..N-1``. Raises
    ``IntegrityError`` naming every missing or unfinished part, or when parts of two
    different ``N`` exist."""
    root = f"{out}{PARTS_SUFFIX}"
    found: dict[int, dict[int, bool]] = {}  # count -> index -> published
    for name, published in out.parts_listing().items():
        m = PART_DIR.fullmatch(name)
        if m:
            done = found.setdefault(int(m.group(2)), {})
            index = int(m.group(1))
            done[index] = done.get(index, False) or (m.group(3) is None and published)
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
    return [Part(i, count).name for i in range(count)]


def _load_part(out: Parted, name: str) -> tuple[PartManifest, object]:
    """A part's manifest (after its check passes) and its provenance; ``IntegrityError``
    otherwise."""
    part = out.part_at(name)
    problems = part.check_for_merge(lambda: verify_output(part))
    if problems:
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise IntegrityError(
            f"part {name} does not verify: {'; '.join(problems[:3])}{more}. Delete "
            f"{part} and run that part again",
            path=str(part),
        )
    with part.reading({MANIFEST_NAME: None, PROVENANCE_NAME: None}) as directory:
        raw = (directory / MANIFEST_NAME).read_bytes()
        provenance = read_provenance_json(directory)  # None when missing or unreadable
    manifest = parse_manifest(raw, f"{part}/{MANIFEST_NAME}")
    return PartManifest(name, manifest, hashlib.sha256(raw).hexdigest()), provenance


def _already_published(out: Output, plan: MergePlan) -> bool:
    """True when ``DIR`` holds this very merge; False when it holds nothing, or only files
    of this merge without its manifest (a merge into a bucket that a kill interrupted:
    copied again); ``OutputError`` when it holds anything else."""
    holds = out.state().holds
    if holds is ABSENT:
        return False
    if holds is DATASET:
        same = out.published_manifest().to_bytes() == plan.manifest.to_bytes()
    else:
        names = set(out.published_names())
        same = False
        if names and names <= {link.new_name for link in plan.links} | {PROVENANCE_NAME}:
            return False
    if not same:
        raise OutputError(
            f"{out} already exists and is not this merge of {out}{PARTS_SUFFIX}; it was not "
            "replaced: move it away first",
            path=str(out),
        )
    return True


def _recut(output: Output, parts: list[PartManifest], directory: Path) -> Recut:
    """The files of parts packed ``--pack fixed`` cut again (:mod:`prep.merge.recut`),
    written into ``directory``, a local one; a part in a bucket or on the Hub is read
    through a local copy of the files to cut again, and of those only."""
    first = parts[0].manifest
    fmt = get_format(first.format, first.dtype, first.tokenizer_id)
    wanted = files_to_recut(parts, fmt)
    with contextlib.ExitStack() as stack:
        dirs = [stack.enter_context(output.part_at(p.name).reading(wanted[p.name]))
                for p in parts]
        logger.info("re-cutting %d parts packed --pack fixed into %s", len(parts), directory)
        try:
            return recut(parts, dirs, fmt, directory)
        except BaseException:  # refused or failed: nothing of it is left (a kill's is redone)
            shutil.rmtree(directory, ignore_errors=True)
            raise


def merge(
    out: Path | str, *, wait_lock: float = 0.0, threads: int | None = None,
    argv: list[str] | None = None, stop: Callable[[], bool] = never,
    staging: Path | None = None, hub: HubSettings | None = None,
) -> MergeOutcome:
    """Verify the parts of ``out`` and publish their merge as ``out`` (a bucket or Hub
    ``out`` staged in ``staging``, a Hub one written as ``hub`` says: its token, its card).

    Raises ``IntegrityError`` (a missing, unfinished, tampered or mismatched part; nothing
    published), ``OutputError`` (``out`` exists and is something else, or a single run's
    staging is in the way), ``LockedError`` (another run or merge holds the lock),
    ``Interrupted`` when ``stop()`` says so before the lock or before publishing (nothing
    published; a rerun merges again)."""
    t0 = time.monotonic()
    output = resolve_output(out, staging, hub)
    with output.hold_lock(wait_lock, stop):
        if output.staging_exists():
            raise OutputError(
                f"{output.staging} is a single run's staging for {output}; finish it or "
                "remove it before merging parts into the same directory",
                path=output.staging,
            )
        names = find_parts(output)
        logger.info("verifying %d parts in %s%s", len(names), output, PARTS_SUFFIX)
        with ThreadPoolExecutor(threads or os.cpu_count() or 1) as pool:  # hashing frees the GIL
            loaded = list(pool.map(lambda n: _load_part(output, n), names))
        parts = [p for p, _ in loaded]
        first = parts[0].manifest  # plan_merge checks the others share its format
        check_compatible(parts)
        recut_dir = output.local_parts_root() / RECUT
        cut = _recut(output, parts, recut_dir) if first.pack == "fixed" else None
        plan = plan_merge(parts, get_format(first.format, first.dtype), cut)
        if _already_published(output, plan):
            if cut:
                shutil.rmtree(recut_dir, ignore_errors=True)
            logger.info("%s is already this merge; nothing to do", output)
            return MergeOutcome("already-complete", output.location, plan.manifest,
                                time.monotonic() - t0)
        if stop():  # after the verification, the long part; building is links only
            raise Interrupted(
                f"stopped on request after verifying the parts; {output} was not published. "
                "Rerun the same command",
                path=str(output),
            )
        provenance = MergeProvenance(
            merged_at=time.time(),
            merge_seconds=time.monotonic() - t0,
            argv=argv,
            parts={p.name: prov for p, prov in loaded},
        )
        made = LocalDir(recut_dir)  # files written here, not a part's
        files = [(made if link.part == RECUT else output.part_at(link.part), link.name,
                  link.new_name) for link in plan.links]
        output.publish_merge(files, provenance_bytes(provenance), plan.manifest.to_bytes())
        if cut:  # DIR holds links to its files
            shutil.rmtree(recut_dir, ignore_errors=True)
        logger.info(
            "published %s from %d parts: %d files (hard links, or copies the store makes: a "
            "bucket, the Hub; %s)", output, len(parts), len(plan.links),
            "the re-cut ones written here" if cut else "none read or written here")
        return MergeOutcome("published", output.location, plan.manifest, time.monotonic() - t0)
