"""Glob patterns, as ``glob.glob(recursive=True)`` and ``HfFileSystem`` read them: the one
place that says what a glob character is and where a pattern's fixed leading part ends; and
which names a directory, bucket-prefix or repository listing takes as source files."""

from __future__ import annotations

from collections.abc import Sequence

GLOB_CHARS = frozenset("*?[")


def has_glob(text: str) -> bool:
    return any(c in GLOB_CHARS for c in text)


def fixed_lead(segments: Sequence[str]) -> list[str]:
    """The leading segments before the first one holding a glob character."""
    lead: list[str] = []
    for seg in segments:
        if has_glob(seg):
            break
        lead.append(seg)
    return lead


# What a listing takes (a plain ``.json`` is left out: beside data it is far more often
# metadata, as ``datasets``' ``dataset_info.json``; name it or give a glob). What a file is
# is then told by its content (``prep.sources.kinds``).
_COMPRESSED = tuple(
    stem + codec for stem in (".jsonl", ".json", ".ndjson") for codec in (".gz", ".zst", ".zstd"))
LISTED = (".parquet", ".arrow", ".jsonl", ".ndjson", *_COMPRESSED)


def listed(name: str) -> bool:
    """Whether a directory, prefix or repository listing takes the file ``name``."""
    return name.lower().endswith(LISTED)
