"""prep: Parquet text corpora to llm.c ``.bin`` token files, reproducibly and resumably."""

from prep.errors import (
    FormatError,
    InputError,
    IntegrityError,
    Interrupted,
    LockedError,
    OutputError,
    PrepError,
    UsageError,
)
from prep.formats.llmc import BinHeader, read_bin, write_bin
from prep.recipe import Recipe, RunOptions

__all__ = [
    "BinHeader",
    "FormatError",
    "InputError",
    "IntegrityError",
    "Interrupted",
    "LockedError",
    "OutputError",
    "PrepError",
    "Recipe",
    "RunOptions",
    "UsageError",
    "read_bin",
    "write_bin",
]
__version__ = "0.1.0"
