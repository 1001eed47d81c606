"""The byte encoder: ids are the text's UTF-8 bytes; V = 256."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.encoders.flatids import FlatIds
from prep.state.identity import TokenizerIdentity

BYTE = "byte"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class ByteEncoder:
    """Ids are the UTF-8 bytes; V = 256; no separator unless ``--doc-sep-id`` gives one."""

    def __init__(self, identity: TokenizerIdentity) -> None:
        self.identity = identity
        self.sep_exclusive = False  # every byte value can occur in text

    def encode_batch(self, texts: list[str], utf8: list[bytes]) -> list[npt.NDArray[Any]]:
        return [np.frombuffer(b, dtype=np.uint8) for b in utf8]

    def encode_flat(self, texts: list[str], utf8: list[bytes]) -> FlatIds:
        """The batch's bytes as one buffer, and their offsets."""
        offsets = np.zeros(len(utf8) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in utf8], out=offsets[1:])
        return FlatIds(np.frombuffer(b"".join(utf8), dtype=np.uint8), offsets)
