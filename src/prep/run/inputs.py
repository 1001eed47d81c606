"""A run's inputs: the source and the encoder, resolved fresh from the recipe or pinned
to what a checkpoint recorded (directory, Hub revisions)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from prep.encoders import Encoder, load_encoder
from prep.recipe import Recipe, RunOptions
from prep.sources import Source, resolve_source
from prep.state.checkpoint import Checkpoint


@dataclass
class Inputs:
    """What a run reads (``source``) and how it tokenizes (``encoder``)."""

    source: Source
    encoder: Encoder


def _encoder(recipe: Recipe, opts: RunOptions, revision: str | None) -> Encoder:
    return load_encoder(
        recipe.tokenizer,
        doc_sep_id=recipe.doc_sep_id,
        no_doc_sep=recipe.no_doc_sep,
        tokenizer_id=recipe.tokenizer_id,
        token=opts.token,
        revision=revision,
        threads=opts.threads,
        offline=opts.offline,
    )


def fresh_inputs(recipe: Recipe, opts: RunOptions, source: Source | None = None) -> Inputs:
    """Resolve the recipe's source (unless given, as a refresh does) and tokenizer now."""
    if source is None:
        source = resolve_source(recipe.source, opts.token, offline=opts.offline)
    return Inputs(source, _encoder(recipe, opts, None))


def pinned_source(cp: Checkpoint, opts: RunOptions) -> Source:
    """The checkpoint's source, resolved from the directory it records; a Hub source is
    the commit and files it records (no listing on the network)."""
    base = Path(cp.source.cwd or os.getcwd())
    return resolve_source(cp.recipe.source, opts.token, base, cp.source, opts.offline)


def pinned_encoder(cp: Checkpoint, opts: RunOptions) -> Encoder:
    """The checkpoint's tokenizer, at the Hub revision it records."""
    return _encoder(cp.recipe, opts, cp.tokenizer.revision)
