"""What a ``tokenizer.json`` decides by its bytes alone, remembered between runs.

A run needs three things from its tokenizer before any document is read: facts (the
vocabulary size, which added tokens are special, the id of a separator named by its text)
and, for ``--engine auto``, whether gigatoken reproduces the file (its ``gate`` and probes
against ``tokenizers``) and what building it needs from a parse of the file (its plan).
Finding them builds a ``tokenizers.Tokenizer`` and runs the probes:
about a fifth of a small run's time. All of it is a function of the file's bytes, of the
versions of ``tokenizers`` and gigatoken, and of prep's own rules (the modules that decide),
so it is kept per file SHA-256 under ``$XDG_CACHE_HOME/prep/tokenizers/`` (default
``~/.cache``), keyed by those versions and by a digest of those modules: any of them changing
makes the memo a stranger, found again and rewritten.

A memo is a convenience, never a source of truth the run cannot do without: a missing,
unreadable, corrupt (its own digest disagrees) or foreign one is ignored; one that cannot be
written is not written. Each answer a memo lacks is found the slow way and added.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prep.fsio import atomic_write_bytes, cache_home
from prep.state.versions import installed_version

FORMAT = 1
# The modules whose rules a memo's answers follow (the gate and probes, the guard, the facts,
# the separator), read as files: importing them from here would be a cycle; and the shipped
# guard sets (a newly shipped one changes gigatoken's verdict).
_RULES = ("gigatoken.py", "guard.py", "hf.py", "separator.py")
ACCEPTED = ""  # an engine's verdict: reproduces the file exactly (else the reason it declines)


@functools.cache
def _key() -> dict[str, Any]:
    """What a memo's answers depend on besides the file: the libraries' versions and the
    bytes of the modules whose rules decide (the gate and probes, the separator rule)."""
    libraries = {name: installed_version(name) for name in ("tokenizers", "gigatoken")}
    rules = hashlib.sha256()
    here = Path(__file__).parent
    for path in [here / m for m in _RULES] + sorted((here / "guards").glob("*.json")):
        rules.update(path.read_bytes())
    return {"format": FORMAT, "libraries": libraries, "rules": rules.hexdigest()}


def _digest(facts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


class TokenizerMemo:
    """The remembered answers for one ``tokenizer.json`` (by its SHA-256); :meth:`keep`
    writes them back when something was added."""

    def __init__(self, sha256: str, facts: dict[str, Any] | None = None) -> None:
        self.sha256 = sha256
        self.facts: dict[str, Any] = facts or {"ids": {}, "engines": {}}
        self._dirty = False
        self._unwritten: dict[str, bytes] = {}  # files for keep() to write beside the memo

    @classmethod
    def recall(cls, sha256: str) -> TokenizerMemo:
        """The memo of the file with this SHA-256; an empty one when none is usable."""
        try:
            stored = json.loads(cls._path(sha256).read_bytes())
            facts = stored["facts"]
            if stored["key"] == _key() and stored["digest"] == _digest(facts):
                return cls(sha256, facts)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # absent, unreadable or not ours: found again, the slow way
        return cls(sha256)

    @staticmethod
    def _path(sha256: str, suffix: str = "json") -> Path:
        return cache_home() / "tokenizers" / f"{sha256}.{suffix}"

    def kept(self, name: str, make: Callable[[], bytes], *, trusted: bool = True
             ) -> tuple[bytes, bool]:
        """The file ``name`` kept beside the memo (a form of the tokenizer file that is
        faster to load), when ``trusted`` and its SHA-256 is the one the memo records; else
        ``make()``, recorded, and written beside the memo by :meth:`keep`. With whether it
        was made now."""
        files: dict[str, str] = self.facts.setdefault("files", {})
        if trusted and name in files:
            try:
                data = self._path(self.sha256, name).read_bytes()
                if hashlib.sha256(data).hexdigest() == files[name]:
                    return data, False
            except OSError:
                pass  # absent or unreadable: made again
        data = make()
        files[name] = hashlib.sha256(data).hexdigest()
        self._unwritten[name] = data
        self._dirty = True
        return data, True

    def drop(self, name: str) -> None:
        """Forget the file ``name`` kept beside the memo (the memo no longer names it)."""
        if self.facts.get("files", {}).pop(name, None) is not None:
            self._dirty = True
        self._unwritten.pop(name, None)

    def fact(self, name: str, find: Callable[[], Any]) -> Any:  # Any: a JSON value
        """The fact ``name``, from the memo or from ``find()`` (then remembered)."""
        if name not in self.facts:
            self.facts[name] = find()
            self._dirty = True
        return self.facts[name]

    def token_id(self, text: str, lookup: Callable[[str], int | None]) -> int | None:
        """``lookup(text)`` (the tokenizer's ``token_to_id``), remembered."""
        ids: dict[str, int | None] = self.facts["ids"]
        if text not in ids:
            ids[text] = lookup(text)
            self._dirty = True
        return ids[text]

    def verdict(self, engine: str) -> str | None:
        """``ACCEPTED``, the reason ``engine`` declined this file, or None when not known."""
        found: str | None = self.facts["engines"].get(engine)
        return found

    def judged(self, engine: str, verdict: str) -> None:
        self.facts["engines"][engine] = verdict
        self._dirty = True

    def keep(self) -> None:
        """Write the memo if something was added; never fails a run (a read-only home, a
        full disk: the next run finds the answers again)."""
        if not self._dirty:
            return
        stored = {"key": _key(), "facts": self.facts, "digest": _digest(self.facts)}
        path = self._path(self.sha256)
        try:
            os.makedirs(path.parent, exist_ok=True)
            for name, data in self._unwritten.items():  # before the memo that names them
                atomic_write_bytes(self._path(self.sha256, name), data)
            atomic_write_bytes(path, json.dumps(stored, sort_keys=True).encode())
        except OSError:
            return
        self._unwritten.clear()
        self._dirty = False
