"""Typed reads of the JSON objects prep keeps its state in (the checkpoint, the manifest).

``int(d["n"])`` turns ``"12"``, ``12.7`` and ``true`` into numbers and ``str(v)`` turns
anything into a string, so an edited (or forged, digest and all) file could pass a value of
the wrong type to code that fails on it later with a bare ``TypeError``. These readers take
exactly the JSON type a field holds and otherwise raise :class:`FieldError`, which names the
field by its path in the file (``splits.train.sealed[2].n_tokens``): each ``from_json``
reads its own keys, and :func:`nested` / :func:`each` / :func:`mapping` prefix the path of
the object they hand it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MISSING = object()


class FieldError(ValueError):
    """A field of a state file is missing or of the wrong type; ``path`` names it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path, self.problem = path, problem

    def within(self, prefix: str) -> FieldError:
        """The same error, seen from the object holding this one at ``prefix``."""
        sep = "" if not self.path or self.path.startswith("[") else "."
        return FieldError(prefix + sep + self.path if self.path else prefix, self.problem)


def shown(value: object) -> str:
    """A value as a message quotes it: its JSON type and a short repr."""
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string",
             list: "list", dict: "object", type(None): "null"}
    text = repr(value)
    return f"{kinds.get(type(value), type(value).__name__)} {text[:40]}{'…' * (len(text) > 40)}"


def _wrong(key: str, value: object, expected: str) -> FieldError:
    return FieldError(key, f"holds {shown(value)}, expected {expected}")


def obj(value: object, key: str = "") -> dict[str, Any]:
    """``value`` if it is a JSON object."""
    if not isinstance(value, dict):
        raise _wrong(key, value, "an object")
    return value


def _get(d: dict[str, Any], key: str, default: object) -> Any:  # Any: a JSON value
    if key in d:
        return d[key]
    if default is _MISSING:
        raise FieldError(key, "is missing")
    return default


def integer(d: dict[str, Any], key: str, *, minimum: int | None = 0, default: object = _MISSING
            ) -> int:
    """An integer (never a boolean), at least ``minimum`` (None: any)."""
    v = _get(d, key, default)
    if not isinstance(v, int) or isinstance(v, bool):
        raise _wrong(key, v, "an integer")
    if minimum is not None and v < minimum:
        raise FieldError(key, f"holds {v}, expected at least {minimum}")
    return v


def maybe_integer(d: dict[str, Any], key: str, *, minimum: int | None = 0) -> int | None:
    """An integer, or null (or absent)."""
    return None if d.get(key) is None else integer(d, key, minimum=minimum)


def number(d: dict[str, Any], key: str, *, default: object = _MISSING) -> float:
    """A number (integer or not, never a boolean), as a float."""
    v = _get(d, key, default)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _wrong(key, v, "a number")
    return float(v)


def flag(d: dict[str, Any], key: str, *, default: object = _MISSING) -> bool:
    """``true`` or ``false``."""
    v = _get(d, key, default)
    if not isinstance(v, bool):
        raise _wrong(key, v, "true or false")
    return v


def text(d: dict[str, Any], key: str, *, default: object = _MISSING) -> str:
    """A string."""
    v = _get(d, key, default)
    if not isinstance(v, str):
        raise _wrong(key, v, "a string")
    return v


def maybe_text(d: dict[str, Any], key: str) -> str | None:
    """A string, or null (or absent)."""
    return None if d.get(key) is None else text(d, key)


def sha256(d: dict[str, Any], key: str) -> str:
    """A SHA-256 in lowercase hex."""
    v = text(d, key)
    if not _SHA256.fullmatch(v):
        raise _wrong(key, v, "a SHA-256 (64 lowercase hex digits)")
    return v


def maybe_sha256(d: dict[str, Any], key: str) -> str | None:
    return None if d.get(key) is None else sha256(d, key)


def nested(d: dict[str, Any], key: str, parse: Callable[[dict[str, Any]], T]) -> T:
    """``parse`` of the object at ``key``; its errors named from here."""
    value = _get(d, key, _MISSING)
    try:
        return parse(obj(value, ""))
    except FieldError as e:
        raise e.within(key) from None


def maybe_nested(d: dict[str, Any], key: str, parse: Callable[[dict[str, Any]], T]) -> T | None:
    """:func:`nested`, or None when the key is null or absent."""
    return None if d.get(key) is None else nested(d, key, parse)


def each(d: dict[str, Any], key: str, parse: Callable[[Any], T], *, default: object = _MISSING
         ) -> tuple[T, ...]:
    """``parse`` of every item of the list at ``key``."""
    items = _get(d, key, default)
    if not isinstance(items, (list, tuple)):
        raise _wrong(key, items, "a list")
    out = []
    for i, item in enumerate(items):
        try:
            out.append(parse(item))
        except FieldError as e:
            raise e.within(f"{key}[{i}]") from None
    return tuple(out)


def mapping(d: dict[str, Any], key: str, parse: Callable[[Any], T], *, default: object = _MISSING
            ) -> dict[str, T]:
    """``parse`` of every value of the object at ``key``, by its (string) key."""
    items = obj(_get(d, key, default), key)
    out = {}
    for name, item in items.items():
        try:
            out[name] = parse(item)
        except FieldError as e:
            raise e.within(f"{key}.{name}") from None
    return out


def as_object(parse: Callable[[dict[str, Any]], T]) -> Callable[[Any], T]:
    """``parse`` for an item that must be an object (for :func:`each` and :func:`mapping`)."""
    return lambda item: parse(obj(item))


def as_count(value: object) -> int:
    """An item that must be an integer >= 0."""
    return integer({"": value}, "")


def as_scalar(value: object) -> str | int | float | bool | None:
    """An item that must be a JSON scalar (not a list or an object)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise _wrong("", value, "a string, a number, true, false or null")


def as_text(value: object) -> str:
    """An item that must be a string."""
    return text({"": value}, "")
