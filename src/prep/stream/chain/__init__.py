"""The prefix digest's chain, ``c = SHA-256(c || d)`` for each row digest ``d`` in turn
(``prep.stream.order.Cursor``), over a whole batch of rows at once.

One link is a 64-byte hash, but in Python each costs about a microsecond of interpreter work
around it, on the committing thread, for every row of the corpus. The compiled ``_chain``
(built at install where a C compiler and OpenSSL's headers are found, like the BPE trainer)
does the hashes alone, with the GIL released; without it the same chain is computed here,
link by link."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

LINK = 32  # bytes of a link and of a row digest


def _python(start: bytes, digests: bytes | bytearray | memoryview) -> bytes:
    chain, sha256, view = start, hashlib.sha256, memoryview(digests)
    for i in range(0, len(view), LINK):
        chain = sha256(chain + view[i : i + LINK]).digest()
    return chain


def _compiled() -> Callable[[bytes, bytes | bytearray | memoryview], bytes] | None:
    try:
        from prep.stream.chain import _chain  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _chain.chain  # type: ignore[no-any-return]


COMPILED = _compiled()


def chain(start: bytes, digests: bytes | bytearray | memoryview) -> bytes:
    """The link after chaining each 32-byte digest of ``digests`` in turn onto ``start``."""
    if len(digests) % LINK:
        raise ValueError(f"{len(digests)} bytes of row digests: not a multiple of {LINK}")
    return (COMPILED or _python)(start, digests)
