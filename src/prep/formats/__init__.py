"""Output formats. Every format implements :class:`~prep.formats.base.ShardFormat`; the
registry below is the only place that names one. A new format is one module here and one
entry in ``_FORMATS``; keep per-format constants as data in its module."""

from __future__ import annotations

from prep.errors import UsageError
from prep.formats.base import ShardFormat, ShardWriter, VerifiedOpen
from prep.formats.llmc import LlmcFormat

__all__ = ["DEFAULT_FORMAT", "ShardFormat", "ShardWriter", "VerifiedOpen", "get_format"]

DEFAULT_FORMAT = "llmc"
_FORMATS: dict[str, type[LlmcFormat]] = {"llmc": LlmcFormat}


def get_format(name: str = DEFAULT_FORMAT) -> ShardFormat:
    """The format called ``name``; raises ``UsageError`` naming the known ones."""
    try:
        return _FORMATS[name]()
    except KeyError:
        raise UsageError(
            f"unknown output format {name!r}; choose one of {', '.join(sorted(_FORMATS))}"
        ) from None
