"""Installed versions of the distributions a run records (the tokenizer memo's key,
``_PROVENANCE.json``, the resume and refresh checks), found as ``importlib.metadata`` finds
them but without importing it: its import (email, zipfile, csv) costs ~25 ms, a tenth of a
one-document run's start-up, for the few versions a run reads."""

from __future__ import annotations

import functools
import os
import re
import sys


def installed_version(name: str) -> str | None:
    """The installed version of the distribution ``name``, or None when it is not installed.

    Like ``importlib.metadata``: the first ``sys.path`` directory holding a
    ``.dist-info`` or ``.egg-info`` directory of that (normalized) name, in listing order,
    and the ``Version`` field of its ``METADATA`` (or ``PKG-INFO``). ``importlib.metadata``
    itself answers where this reading would not be its own: a zip or an egg on ``sys.path``
    before the match, a metadata file rather than a directory, no ``Version`` field, or no
    match at all."""
    wanted = _normalized(name)
    for entry in sys.path:
        path = entry or "."
        if os.path.isfile(path) or (path.endswith(".egg") and os.path.isdir(path)):
            return _metadata_version(name)  # importlib looks inside: so must the answer
        for found in _metadata_dirs(path):
            if _normalized(found.rpartition(".")[0].partition("-")[0]) != wanted:
                continue
            inner = "METADATA" if found.endswith(".dist-info") else "PKG-INFO"
            version = _version_field(os.path.join(path, found, inner))
            return version if version is not None else _metadata_version(name)
    return _metadata_version(name)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_dirs(directory: str) -> tuple[str, ...]:
    """The ``.dist-info`` and ``.egg-info`` entries of a ``sys.path`` directory, in the
    order the directory lists them (as ``importlib.metadata`` takes them); listed again
    once the directory changes (an install), as ``importlib.metadata`` does."""
    try:
        return _listed(directory, os.stat(directory).st_mtime_ns)
    except OSError:  # gone, or never there
        return ()


@functools.lru_cache(maxsize=64)
def _listed(directory: str, mtime_ns: int) -> tuple[str, ...]:
    names = os.listdir(directory)
    return tuple(n for n in names if n.lower().endswith((".dist-info", ".egg-info")))


def _version_field(path: str) -> str | None:
    """The ``Version:`` header of a core-metadata file (None: unreadable, or none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    return None  # the headers end at the first empty line
                key, sep, value = line.partition(":")
                if sep and key.strip().lower() == "version":
                    return value.strip()
    except OSError:  # an .egg-info file, not a directory; or unreadable
        return None
    return None


def _metadata_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
