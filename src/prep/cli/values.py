"""Command-line values: counts written the way people write them, and the closest option to
a misspelled one. Pure functions; the CLI turns their ``ValueError`` into a usage error,
through the argparse types here (:func:`count`, :func:`seconds`, :func:`fraction`), and
shows each default as they parse it back (:func:`shown`).

A count is a whole number written plainly (``100000000``), with underscores
(``100_000_000``), in scientific notation (``1e8``) or with a decimal suffix (``100M``):
``K`` = 10^3, ``M`` = 10^6, ``G`` or ``B`` = 10^9, ``T`` = 10^12, either case. Whatever the
spelling, the value must be a whole number: ``1.5M`` is 1,500,000; ``1e-3`` and ``2.5``
are refused.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation

SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9, "t": 10**12}
# digits with single underscores between them, an optional fraction and exponent, a suffix
_COUNT = re.compile(
    r"(?P<num>\d+(?:_\d+)*(?:\.\d+(?:_\d+)*)?(?:e\+?\d+)?)(?P<suffix>[kmgbt]?)", re.IGNORECASE
)
FORMS = "100000000, 100_000_000, 1e8 or 100M"
PLAIN_FORMS = "digits, such as 4"  # the hint for a small count (workers, threads, parts)


def parse_count(text: str, minimum: int = 0, forms: str = FORMS) -> int:
    """The whole number ``text`` spells (see the module docstring), at least ``minimum``.

    Raises ``ValueError`` with a message that quotes the text and shows the accepted
    ``forms`` (a token count's, or a small count's: :data:`PLAIN_FORMS`).
    """
    m = _COUNT.fullmatch(text.strip())
    if m is None:
        if text.strip().startswith("-") and _COUNT.fullmatch(text.strip()[1:]):
            raise ValueError(f"{text!r} is negative; give a number >= {minimum:,}")
        raise ValueError(f"{text!r} is not a whole number; write it as {forms}")
    try:
        value = Decimal(m["num"].replace("_", "")) * SUFFIXES.get(m["suffix"].lower(), 1)
    except InvalidOperation:  # pragma: no cover - the pattern only admits valid decimals
        raise ValueError(f"{text!r} is not a whole number; write it as {forms}") from None
    if value != value.to_integral_value():
        exact = f"{value.normalize():f}"
        raise ValueError(f"{text!r} is not a whole number ({exact}); write it as {forms}")
    if value < minimum:
        raise ValueError(f"{text!r} is too small; give a number >= {minimum:,}")
    return int(value)


def format_count(value: int) -> str:
    """``value`` in the shortest form :func:`parse_count` reads back exactly: ``100M``,
    ``1500K``, ``1_337`` (a default shown in help text can be typed as shown)."""
    for suffix, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if value and value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value:_}"


def closest_option(typed: str, options: Iterable[str]) -> str | None:
    """The option in ``options`` that ``typed`` most likely misspells (``--text-colum`` ->
    ``--text-column``), or None when nothing is close. ``--opt=value`` is matched by its
    option part."""
    name = typed.split("=", 1)[0]
    candidates = [o for o in options if o.startswith("--")] if name.startswith("--") else list(
        options
    )
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return matches[0] if matches else None


def count(minimum: int, plain: bool = False) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``minimum`` (``1e8``, ``100_000_000``, ``100M``);
    ``plain``: a small count (workers), whose errors hint at digits, not ``100M``."""
    forms = PLAIN_FORMS if plain else FORMS

    def parse(text: str) -> int:
        try:
            return parse_count(text, minimum, forms)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return parse


def seconds(allow_zero: bool) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds, > 0 (>= 0 when ``allow_zero``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        bound = ">= 0" if allow_zero else "> 0"
        if not math.isfinite(value):  # nan would make a wait spin forever
            raise argparse.ArgumentTypeError(f"{text} must be {bound} and finite")
        if value < 0 or (value == 0 and not allow_zero):
            raise argparse.ArgumentTypeError(f"{text} must be {bound}")
        return value

    return parse


def fraction(text: str) -> float:
    """An argparse type: a number in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be in [0, 1): 0 <= F < 1")
    return value


def shown(value: object) -> str:
    """A default as the help shows it, in a spelling the option's type parses back."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return format_count(value) if value >= 10_000 else str(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
