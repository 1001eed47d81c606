"""What changed between two identities, one line per difference: the one place a resume's
refusals and a refresh's "changed:" log line come from."""

from __future__ import annotations

from typing import Any

from prep.recipe import Recipe
from prep.state.identity import (
    FileIdentity,
    SourceIdentity,
    TokenizerFingerprint,
    TokenizerIdentity,
)
from prep.state.manifest import Manifest, package_versions

# Packages whose version can change the output bytes.
OUTPUT_PACKAGES = ("tokenizers", "numpy")


def flag(name: str) -> str:
    """The command-line option of a recipe field."""
    return "--" + name.replace("_", "-")


def _conflict(name: str, typed: object, was: str) -> str:
    """One wording for every contradicted option: ``was`` says what it contradicts."""
    return f"{flag(name)}: typed {typed!r}, {was}"


def recipe_conflicts(saved: Recipe, typed: dict[str, Any]) -> list[str]:
    """Options typed on the command line that differ from the saved recipe (paths are
    compared in their canonical form, which both sides hold)."""
    return [
        _conflict(name, value, f"the run was started with {getattr(saved, name)!r}")
        for name, value in sorted(typed.items())
        if getattr(saved, name) != value
    ]


def _built_with(manifest: Manifest, source: str) -> dict[str, Any]:
    """The recipe settings a published manifest records, keyed like :class:`Recipe`'s fields
    (all but ``tokenizer``, which it records by its SHA-256)."""
    src = manifest.source
    return {
        "source": source,
        "text_column": src.text_column,
        "split_column": src.split_column,
        "dataset": manifest.dataset,
        "tokenizer_id": manifest.tokenizer_id,
        "doc_sep_id": manifest.doc_sep_id,
        "no_doc_sep": manifest.doc_sep_id is None,
        **manifest.recipe,  # val_fraction (absent with a split column), seed, ...
    }


def manifest_conflicts(
    manifest: Manifest, typed: dict[str, Any], source: str, tokenizer_sha: str | None
) -> list[str]:
    """Options typed that contradict a published dataset's manifest, worded as
    :func:`recipe_conflicts` words them. The caller resolves what the manifest records in
    another form than the command line: ``source`` is the manifest's source and
    ``typed["source"]`` the typed one, both as manifests record sources; ``tokenizer_sha``
    is the SHA-256 of the typed tokenizer's tokenizer.json."""
    built = _built_with(manifest, source)
    out = []
    for name, value in sorted(typed.items()):
        if name == "tokenizer":
            if tokenizer_sha != manifest.tokenizer_sha256:
                out.append(
                    _conflict(
                        name,
                        value,
                        f"SHA-256 {str(tokenizer_sha)[:12]}…; the dataset was built with a "
                        f"tokenizer whose SHA-256 is {manifest.tokenizer_sha256[:12]}…",
                    )
                )
        elif name == "no_doc_sep":
            if value and not built["no_doc_sep"]:
                out.append(
                    _conflict(name, value, f"the dataset was built with separator "
                              f"{built['doc_sep_id']}")
                )
        elif name in built and built[name] != value:
            out.append(_conflict(name, value, f"the dataset was built with {built[name]!r}"))
    return out


def listing_changes(saved: SourceIdentity, now: SourceIdentity) -> list[str]:
    """How the current file list differs from the saved one (paths, sizes, revision)."""
    before = {f.path: f.size for f in saved.files}
    current = {f.path: f.size for f in now.files}
    diffs = []
    for path in sorted(set(before) | set(current)):
        if path not in current:
            diffs.append(f"{path}: removed")
        elif path not in before:
            diffs.append(f"{path}: added")
        elif before[path] != current[path]:
            diffs.append(f"{path}: size {before[path]:,} -> {current[path]:,} bytes")
    if saved.revision != now.revision:
        diffs.append(f"revision {saved.revision} -> {now.revision}")
    return diffs


def trusted(was: FileIdentity, now: FileIdentity, same_mtime: bool = False) -> bool:
    """Whether the source file ``now`` is taken to hold the bytes ``was`` recorded, without
    reading it: the same path, the same size and the same fingerprint (a local file's mtime,
    ctime and inode; an object's ETag and version id: docs/format.md says what this trusts
    and what it misses). **The** one place a refresh, an incremental refresh and the resume
    of one decide to skip reading a file.

    ``same_mtime``: for a file recorded without a fingerprint (a local file in a v4 or older
    manifest, ``--source sample``), whether its mtime is the one the published run recorded.
    That is enough to call a published dataset up to date, as before v5, but the callers
    that carry a SHA-256 into a new version pass nothing, so such a file is hashed there."""
    if was.path != now.path or was.size != now.size:
        return False
    if was.fingerprint:
        return was.fingerprint == now.fingerprint
    return same_mtime


def _sep(sep: int | None, origin: str | None) -> str:
    text = "none" if sep is None else f"{sep:,}"
    return f"{text} (from {origin})" if origin else text


def tokenizer_change(spec: str, saved: TokenizerIdentity, now: TokenizerIdentity) -> str | None:
    """What changed in the tokenizer ``spec`` since ``saved``, naming the file to restore:
    its ``tokenizer.json``, or the config file the separator came from; None if nothing."""
    if saved.sha256 != now.sha256 or saved.vocab_size != now.vocab_size:
        where = spec if spec.endswith(".json") else f"the tokenizer.json of {spec}"
        return (
            f"{where} changed since the run started (SHA-256 {saved.sha256[:12]}… is now "
            f"{now.sha256[:12]}…); restore it"
        )
    if saved.doc_sep_id != now.doc_sep_id:
        origins = (saved.doc_sep_from, now.doc_sep_from)
        files = list(dict.fromkeys(o for o in origins if o and o.endswith(".json")))
        restore = " and ".join(files) or f"the config files beside {spec}"
        return (
            "the document separator changed since the run started: it was "
            f"{_sep(saved.doc_sep_id, saved.doc_sep_from)}, it is now "
            f"{_sep(now.doc_sep_id, now.doc_sep_from)}; restore {restore}"
        )
    return None


def version_changes(saved: dict[str, str], now: dict[str, str]) -> list[str]:
    """Versions of the packages that can change the output that differ."""
    return [
        f"{name} {saved.get(name)} -> {now.get(name)}"
        for name in OUTPUT_PACKAGES
        if saved.get(name) != now.get(name)
    ]


def recipe_changes(manifest: Manifest, recipe: Recipe, dataset: str) -> list[str]:
    """Recipe settings that differ from a published manifest's."""
    changes = []
    want, was = recipe.manifest_recipe(), manifest.recipe
    if want != was:
        for key in sorted(set(want) | set(was)):
            if want.get(key) != was.get(key):
                changes.append(f"recipe {key}: {was.get(key)!r} -> {want.get(key)!r}")
    src = manifest.source
    for key, before, value in (
        ("text_column", src.text_column, recipe.text_column),
        ("split_column", src.split_column, recipe.split_column),
    ):
        if before != value:
            changes.append(f"{key}: {before!r} -> {value!r}")
    if manifest.dataset != dataset:
        changes.append(f"dataset name: {manifest.dataset!r} -> {dataset!r}")
    return changes


def fingerprint_changes(manifest: Manifest, now: TokenizerFingerprint) -> list[str]:
    """How a tokenizer's fingerprint differs from what a published manifest recorded."""
    changes = []
    if now.sha256 != manifest.tokenizer_sha256:
        changes.append("tokenizer.json changed")
    if now.doc_sep_id != manifest.doc_sep_id:
        changes.append(f"separator {manifest.doc_sep_id} -> {now.doc_sep_id}")
    if now.tokenizer_id != manifest.tokenizer_id:
        changes.append(f"tokenizer id {manifest.tokenizer_id} -> {now.tokenizer_id}")
    return changes


def output_versions() -> dict[str, str]:
    """Installed versions of the packages that can change the output bytes."""
    return {k: v for k, v in package_versions().items() if k in OUTPUT_PACKAGES}
