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
from prep.recipe import Recipe, RunOptions
from prep.state.manifest import Manifest

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
__version__ = "0.1.0"

if TYPE_CHECKING:
    from prep.api import prepare
    from prep.formats.llmc import BinHeader, read_bin, write_bin
    from prep.tokenizer.model import Tokenizer
    from prep.tokenstream import TokenStream


def __getattr__(name: str) -> Any:
    # prepare() pulls in the whole pipeline (pyarrow, huggingface_hub) and the .bin helpers
    # numpy: only when used, so `import prep` and `prep verify` stay quick, and the signal
    # guard every command installs first (prep.startup) does not wait for them.
    if name == "prepare":
        from prep.api import prepare

        return prepare
    if name == "TokenStream":
        from prep.tokenstream import TokenStream

        return TokenStream
    if name == "Tokenizer":
        from prep.tokenizer.model import Tokenizer

        return Tokenizer
    if name in ("BinHeader", "read_bin", "write_bin"):
        from prep.formats import llmc

        return getattr(llmc, name)
    raise AttributeError(f"module 'prep' has no attribute {name!r}")
