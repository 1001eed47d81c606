"""Where rows come from. :func:`resolve_source` picks the kind of source by the URI's
scheme (``hf://`` the Hub, ``s3://`` and ``gs://`` a bucket, anything else local files);
every kind is a
:class:`~prep.sources.base.Source`. A new kind of source is one module here and one line in
:func:`resolve_source`."""

from __future__ import annotations

import os
from pathlib import Path

from prep.buckets.uri import is_bucket_uri, parse_bucket_uri
from prep.fsio import canonical_path
from prep.hub.paths import dataset_uri, parse_dataset_uri
from prep.sources.base import (
    SOURCE_FORMS,
    Signature,
    Source,
    SourceFile,
    arm_expected,
    hash_and_check,
    open_identified,
)
from prep.sources.kinds import Unit
from prep.sources.local import SAMPLE, SAMPLE_CORPUS, LocalSource, canonical_source, resolve_local
from prep.sources.reading import (
    Block,
    block_batches,
    identify,
    iter_batches,
    read_blocks,
    unit_batches,
    units_of,
)
from prep.state.identity import SourceIdentity

__all__ = [
    "SAMPLE",
    "SAMPLE_CORPUS",
    "SOURCE_FORMS",
    "Block",
    "LocalSource",
    "Signature",
    "Source",
    "SourceFile",
    "Unit",
    "arm_expected",
    "block_batches",
    "canonical_source",
    "hash_and_check",
    "identify",
    "iter_batches",
    "open_identified",
    "read_blocks",
    "recorded_uri",
    "resolve_local",
    "resolve_source",
    "unit_batches",
    "units_of",
]


def resolve_source(
    spec: str,
    token: str | None,
    base: Path | None = None,
    pinned: SourceIdentity | None = None,
    offline: bool = False,
) -> Source:
    """The source's file list: ``hf://`` through the Hub (``offline``: its local cache; as
    ``pinned`` recorded it on resume), ``s3://`` and ``gs://`` a bucket (as ``pinned``
    recorded it, each object checked), ``sample`` the bundled corpus, anything else local
    (relative to ``base``; listed again, and compared with ``pinned`` by the caller)."""
    if is_bucket_uri(spec):
        from prep.sources.bucket import resolve_bucket_source

        return resolve_bucket_source(spec, pinned)
    if spec.startswith("hf://"):
        from prep.hub.calls import HubOptions
        from prep.sources.hub import resolve_hub_source

        options = HubOptions(offline=offline)
        return resolve_hub_source(spec, token=token, options=options, pinned=pinned)
    if spec == SAMPLE:
        sample = resolve_local(str(SAMPLE_CORPUS))
        sample.uri = SAMPLE
        for f in sample.files:  # installed files: their inodes and times are this machine's
            f.fingerprint = ()
        return sample
    return resolve_local(spec, base)


def recorded_uri(spec: str) -> str:
    """A source as a manifest records it, to compare typed options with a published dataset:
    a Hub URI without its revision (the manifest records the commit), ``sample`` by name, a
    local path canonical (``spec`` from :func:`canonical_source`, or a manifest's own URI: one
    written before paths were canonical is resolved here, best effort)."""
    if spec.startswith("hf://"):
        return dataset_uri(parse_dataset_uri(spec))
    if is_bucket_uri(spec):
        return parse_bucket_uri(spec).uri
    if spec == SAMPLE or os.path.isabs(spec):
        return spec
    return canonical_path(spec)
