"""``--refresh`` for cron: the quick "unchanged?" test, and the atomic swap of a new version.

Unchanged means: the source lists the same files with the same sizes and mtimes (a file
whose mtime changed is hashed and compared), the same Hub commit, the same tokenizer bytes
and separator, and the same recipe as the published version recorded. No Parquet content is
read for it.

The swap exchanges ``DIR.incomplete`` (the new version) with ``DIR`` in one
``renameat2(RENAME_EXCHANGE)``, then moves the old version to ``DIR.previous``. A journal
(``DIR.swap.json``, written first, naming the new manifest's SHA-256) lets the next run
finish an interrupted swap forward; it never swaps the old version back in. Where the
exchange is unavailable (not Linux, or a filesystem without it) the swap is two renames and
``DIR`` is missing for the instant between them.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prep.encoders import tokenizer_fingerprint
from prep.errors import IntegrityError
from prep.fsio import (
    atomic_write_bytes,
    exchange,
    file_sha256,
    fsync_dir,
    rename_noreplace,
    stray_temps,
)
from prep.publish import OutputPaths
from prep.recipe import Recipe
from prep.sources import Source, recorded_uri
from prep.state.changes import fingerprint_changes, manifest_conflicts, recipe_changes
from prep.state.manifest import MANIFEST_NAME, Manifest, read_manifest
from prep.state.provenance import read_source_mtimes

logger = logging.getLogger(__name__)


@dataclass
class Freshness:
    """Whether the published version (``manifest``, read once for the whole refresh) is
    current; ``changes`` says what differs, and ``settings`` which of those are the
    tokenizer's or the recipe's (not the source's)."""

    manifest: Manifest
    changes: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)

    @property
    def unchanged(self) -> bool:
        return not self.changes

    @property
    def previous_corpus_sha256(self) -> str:
        return self.manifest.corpus_manifest_sha256


def _manifest_sha(directory: Path) -> str | None:
    try:
        return file_sha256(directory / MANIFEST_NAME)
    except FileNotFoundError:
        return None


def check_fresh(
    paths: OutputPaths, recipe: Recipe, source: Source, token: str | None, offline: bool = False
) -> Freshness:
    """Compare the published ``DIR`` with the current source, tokenizer and recipe."""
    manifest = read_manifest(paths.final)
    changes = source.changes_from(manifest.source.identity(), read_source_mtimes(paths.final))
    tok = tokenizer_fingerprint(
        recipe.tokenizer,
        doc_sep_id=recipe.doc_sep_id,
        no_doc_sep=recipe.no_doc_sep,
        tokenizer_id=recipe.tokenizer_id,
        token=token,
        offline=offline,
    )
    settings = fingerprint_changes(manifest, tok)
    settings += recipe_changes(manifest, recipe, recipe.dataset or paths.final.name)
    return Freshness(manifest, changes + settings, settings)


def complete_conflicts(
    manifest: Manifest, typed: dict[str, Any], token: str | None, offline: bool = False
) -> list[str]:
    """Options typed (paths canonical) that contradict a published dataset's manifest: the
    source compared as manifests record it, the tokenizer by the SHA-256 of its
    tokenizer.json (see :func:`prep.state.changes.manifest_conflicts`)."""
    typed = dict(typed)
    if "source" in typed:
        typed["source"] = recorded_uri(typed["source"])
    sha = None
    if "tokenizer" in typed:
        sha = tokenizer_fingerprint(
            typed["tokenizer"],
            doc_sep_id=None,
            no_doc_sep=True,
            tokenizer_id=None,
            token=token,
            offline=offline,
        ).sha256
    return manifest_conflicts(manifest, typed, recorded_uri(manifest.source.uri), sha)


def check_complete(
    paths: OutputPaths,
    typed: dict[str, Any],
    token: str | None,
    offline: bool = False,
    *,
    staged: bool = False,
) -> None:
    """``--resume`` of a complete dataset: refuse typed options that contradict its
    manifest, listing each, as a resume of staging would. ``staged``: the dataset is the
    staging directory, ready to publish (a crash came after its checkpoint was dropped)."""
    if not typed:
        return
    final = paths.final
    where = paths.staging if staged else final
    conflicts = complete_conflicts(read_manifest(where), typed, token, offline)
    if not conflicts:
        return
    if staged:
        state = f"it is complete and ready to publish as {final.name}"
        keep = f"Drop them to publish it as it is, then rebuild {final.name} with them by"
    else:
        state = "it is complete"
        keep = f"Drop them to keep {final.name} as it is, or rebuild it with them by"
    raise IntegrityError(
        f"--resume of {where}: {state}, and options contradict the recipe it was built "
        "with:\n  "
        + "\n  ".join(conflicts)
        + f"\n{keep} --refresh (type the full recipe; the current version is kept as "
        f"{final.name}.previous)",
        path=where,
    )


def _retire(paths: OutputPaths) -> None:
    """Move the old version (now at the staging name) to ``DIR.previous``."""
    if paths.previous.exists():
        shutil.rmtree(paths.previous)
    rename_noreplace(paths.staging, paths.previous)
    fsync_dir(paths.final.parent)


def recover_swap(paths: OutputPaths) -> None:
    """Finish forward a swap that a crash interrupted (the journal says which way)."""
    for stray in stray_temps(paths.final.parent, paths.journal.name):
        stray.unlink()  # a journal write that a crash interrupted; never took effect
    if not paths.journal.exists():
        return
    try:
        new_sha = json.loads(paths.journal.read_bytes())["new_manifest_sha256"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise IntegrityError(
            f"{paths.journal} is unreadable ({e}); inspect {paths.final} and "
            f"{paths.staging}, keep the newer one as {paths.final}, then delete the journal",
            path=paths.journal,
        ) from e
    if _manifest_sha(paths.final) == new_sha:
        if paths.staging.exists() and _manifest_sha(paths.staging) != new_sha:
            logger.info("finishing an interrupted swap: moving the old version aside")
            _retire(paths)
    elif not paths.final.exists() and _manifest_sha(paths.staging) == new_sha:
        logger.info("finishing an interrupted swap: publishing the new version")
        rename_noreplace(paths.staging, paths.final)
        fsync_dir(paths.final.parent)
    paths.journal.unlink()
    fsync_dir(paths.final.parent)


def swap_in(paths: OutputPaths) -> None:
    """Replace ``DIR`` with the finished staging directory; keep the old as ``DIR.previous``."""
    new_sha = _manifest_sha(paths.staging)
    atomic_write_bytes(paths.journal, json.dumps({"new_manifest_sha256": new_sha}).encode())
    if exchange(paths.staging, paths.final):
        fsync_dir(paths.final.parent)
        _retire(paths)
    else:
        if paths.previous.exists():
            shutil.rmtree(paths.previous)
        rename_noreplace(paths.final, paths.previous)
        rename_noreplace(paths.staging, paths.final)
        fsync_dir(paths.final.parent)
    paths.journal.unlink()
    fsync_dir(paths.final.parent)
