"""``--refresh`` for cron: the quick "unchanged?" test, and the checks of a complete dataset.

Unchanged means: the source lists the same files with the same sizes and the same bytes,
the same Hub commit, the same tokenizer bytes and separator, and the same recipe as the
published version recorded. A file whose fingerprint is unchanged (a local file's mtime,
ctime and inode; an object's ETag and version: :func:`prep.state.changes.trusted`, and
docs/format.md for what that trusts) is not read; any other is hashed and its bytes decide;
``--rehash`` hashes every file. So an unchanged source costs a listing and two JSON files.
Swapping the new version in is the output's (:meth:`prep.outputs.Swappable.swap_in`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from prep.encoders import tokenizer_fingerprint
from prep.errors import IntegrityError
from prep.outputs import Output
from prep.recipe import Recipe
from prep.sources import Source, recorded_uri
from prep.state.changes import fingerprint_changes, manifest_conflicts, recipe_changes
from prep.state.manifest import Manifest, read_manifest
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


def check_fresh(
    out: Output, recipe: Recipe, source: Source, token: str | None, offline: bool = False,
    rehash: bool = False,
) -> Freshness:
    """Compare the published version with the current source (``rehash``: every file read
    and hashed), tokenizer and recipe."""
    published = out.refresh_base()
    manifest = read_manifest(published)
    changes = source.changes_from(
        manifest.source.identity(), read_source_mtimes(published), rehash
    )
    tok = tokenizer_fingerprint(
        recipe.tokenizer,
        doc_sep_id=recipe.doc_sep_id,
        no_doc_sep=recipe.no_doc_sep,
        tokenizer_id=recipe.tokenizer_id,
        token=token,
        offline=offline,
    )
    settings = fingerprint_changes(manifest, tok)
    settings += recipe_changes(manifest, recipe, recipe.dataset or out.name)
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
    out: Output,
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
    name = out.name
    where = out.staging if staged else out
    manifest = read_manifest(out.staging) if staged else out.published_manifest()
    conflicts = complete_conflicts(manifest, typed, token, offline)
    if not conflicts:
        return
    if staged:
        state = f"it is complete and ready to publish as {name}"
        keep = f"Drop them to publish it as it is, then rebuild {name} with them by"
    else:
        state = "it is complete"
        keep = f"Drop them to keep {name} as it is, or rebuild it with them by"
    raise IntegrityError(
        f"--resume of {where}: {state}, and options contradict the recipe it was built "
        "with:\n  "
        + "\n  ".join(conflicts)
        + f"\n{keep} --refresh (type the full recipe; the current version is kept as "
        f"{name}.previous)",
        path=str(where),
    )
