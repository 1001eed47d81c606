"""Glob patterns, as ``glob.glob(recursive=True)`` and ``HfFileSystem`` read them: the one
place that says what a glob character is and where a pattern's fixed leading part ends."""

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
