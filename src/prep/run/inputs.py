"""A run's inputs: the source and the encoder, resolved fresh from the recipe or pinned
to what a checkpoint recorded (canonical paths, Hub revisions)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from prep.encoders import Encoder, canonical_tokenizer, load_encoder
from prep.recipe import Recipe, RunOptions
from prep.sources import Source, canonical_source, resolve_source
from prep.state.checkpoint import Checkpoint


@dataclass
class Inputs:
    """What a run reads (``source``) and how it tokenizes (``encoder``)."""

    source: Source
    encoder: Encoder


def _encoder(
    recipe: Recipe, opts: RunOptions, revision: str | None, require_sep: bool = True
) -> Encoder:
    return load_encoder(
        recipe.tokenizer,
        doc_sep_id=recipe.doc_sep_id,
        no_doc_sep=recipe.no_doc_sep,
        tokenizer_id=recipe.tokenizer_id,
        token=opts.token,
        revision=revision,
        threads=opts.threads,
        offline=opts.offline,
        require_sep=require_sep,
    )


def fresh_inputs(recipe: Recipe, opts: RunOptions, source: Source | None = None) -> Inputs:
    """Resolve the recipe's source (unless given, as a refresh does) and tokenizer now."""
    if source is None:
        source = resolve_source(recipe.source, opts.token, offline=opts.offline)
    return Inputs(source, _encoder(recipe, opts, None))


def recorded(cp: Checkpoint) -> Checkpoint:
    """The checkpoint with its recipe's paths canonical. A checkpoint written before paths
    were resolved at the start holds them as typed, with the directory they were typed in
    (``source.cwd``): they are resolved from there, once."""
    cwd = cp.source.cwd
    if not cwd:
        return cp
    recipe = cp.recipe
    source = canonical_source(recipe.source, Path(cwd))
    tokenizer = canonical_tokenizer(recipe.tokenizer, Path(cwd))
    return replace(cp, recipe=replace(recipe, source=source, tokenizer=tokenizer))


def pinned_source(cp: Checkpoint, opts: RunOptions) -> Source:
    """The checkpoint's source, as its canonical path names it (from any directory); a Hub
    source is the commit and files it records (no listing on the network)."""
    return resolve_source(cp.recipe.source, opts.token, None, cp.source, opts.offline)


def pinned_encoder(cp: Checkpoint, opts: RunOptions) -> Encoder:
    """The checkpoint's tokenizer, at the Hub revision it records. A separator that vanished
    since is a change to report (naming the file), not a missing choice to ask for."""
    return _encoder(cp.recipe, opts, cp.tokenizer.revision, require_sep=False)
