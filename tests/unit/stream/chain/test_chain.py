"""The prefix digest's chain over a batch (``prep.stream.chain``): the compiled links and the
Python ones are the definition, ``c = SHA-256(c || d)`` per 32-byte row digest, written
here again with hashlib as the oracle."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prep.stream import chain as hashchain
from prep.stream.order import Cursor, row_digest

IMPLEMENTATIONS = [pytest.param(hashchain._python, id="python")]
if hashchain.COMPILED is not None:
    IMPLEMENTATIONS.insert(0, pytest.param(hashchain.COMPILED, id="c"))


def oracle(start: bytes, digests: list[bytes]) -> bytes:
    for d in digests:
        start = hashlib.sha256(start + d).digest()
    return start


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@given(start=st.binary(min_size=32, max_size=32),
       digests=st.lists(st.binary(min_size=32, max_size=32), max_size=40))
def test_each_implementation_is_the_chain(impl, start: bytes, digests: list[bytes]) -> None:
    assert impl(start, b"".join(digests)) == oracle(start, digests)
    assert impl(start, bytearray(b"".join(digests))) == oracle(start, digests)
    assert impl(start, memoryview(b"".join(digests))) == oracle(start, digests)


def test_the_compiled_chain_is_built_here() -> None:
    """The install builds it where a C compiler and OpenSSL's headers are (CI installs both):
    without it every row costs the committing thread a microsecond of Python."""
    assert hashchain.COMPILED is not None


@pytest.mark.parametrize("bad", [b"x" * 31, b"x" * 33])
def test_digests_must_be_whole(bad: bytes) -> None:
    with pytest.raises(ValueError, match="not a multiple of 32"):
        hashchain.chain(bytes(32), bad)


def test_a_cursor_links_a_batch_as_it_links_rows_one_by_one() -> None:
    rows = [f"row {i}".encode() * (i % 5) for i in range(300)]
    one, batch = Cursor(), Cursor()
    for r in rows:
        one.visit(r)
    batch.link_all(b"".join(row_digest(r) for r in rows))
    assert (batch.prefix_sha256, batch.rows_visited) == (one.prefix_sha256, one.rows_visited)
