"""prep: Parquet text corpora to llm.c ``.bin`` token files, reproducibly and resumably."""

from typing import TYPE_CHECKING, Any

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
from prep.recipe import Recipe, RunOptions
from prep.state.manifest import Manifest
from prep.tokenstream import TokenStream

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
    "TransientError",
    "UsageError",
    "prepare",
    "read_bin",
    "write_bin",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from prep.api import prepare


def __getattr__(name: str) -> Any:
    # prepare() pulls in the whole pipeline (pyarrow, huggingface_hub): only when used, so
    # `import prep` and `prep verify` stay quick.
    if name == "prepare":
        from prep.api import prepare

        return prepare
    raise AttributeError(f"module 'prep' has no attribute {name!r}")
