"""prep: Parquet text corpora to llm.c ``.bin`` token files, reproducibly and resumably.

Every public name is loaded on first use (PEP 562), so ``import prep`` imports nothing but
this file: each entry point's first statement is the signal guard (``prep.startup``), and
Python imports this package before any module of it, so whatever this file imported would
run before the guard, in the window where a SIGTERM still kills the process by the signal.
``tests/ops/test_startup_signals.py`` holds it to that."""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing, which costs milliseconds before the guard

__all__ = [
    "BinHeader",
    "FormatError",
    "InputError",
    "IntegrityError",
    "Interrupted",
    "LockedError",
    "Manifest",
    "OutputError",
    "PrepError",
    "Recipe",
    "RunOptions",
    "TokenStream",
    "Tokenizer",
    "TransientError",
    "UsageError",
    "prepare",
    "read_bin",
    "write_bin",
]

# Each public name and the module that defines it.
_HOMES = {
    **dict.fromkeys(
        ("FormatError", "InputError", "IntegrityError", "Interrupted", "LockedError",
         "OutputError", "PrepError", "TransientError", "UsageError"),
        "prep.errors",
    ),
    "__version__": "prep._version",  # its one definition, loaded on first use like the rest
    "Recipe": "prep.recipe",
    "RunOptions": "prep.recipe",
    "Manifest": "prep.readers",  # with prep.outputs, which Manifest.load reads through
    "prepare": "prep.api",
    "TokenStream": "prep.readers.tokenstream",
    "Tokenizer": "prep.tokenizer.model",
    "BinHeader": "prep.formats.llmc",
    "read_bin": "prep.formats.llmc",
    "write_bin": "prep.formats.llmc",
}

if TYPE_CHECKING:
    from typing import Any

    from prep._version import __version__ as __version__
    from prep.api import prepare
    from prep.errors import (
        FormatError,
        InputError,
        IntegrityError,
        Interrupted,
        LockedError,
        OutputError,
        PrepError,
        TransientError,
        UsageError,
    )
    from prep.formats.llmc import BinHeader, read_bin, write_bin
    from prep.readers.tokenstream import TokenStream
    from prep.recipe import Recipe, RunOptions
    from prep.state.manifest import Manifest
    from prep.tokenizer.model import Tokenizer


def __getattr__(name: str) -> Any:  # Any: whichever public name is asked for
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'prep' has no attribute {name!r}")
    value = getattr(__import__(home, fromlist=[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
