"""The fast paths of a JSON Lines block against the exact line-by-line parser: whatever they
answer is what it gives every line (or they answer None), and the compiled scanner answers
every block of lines that json.dumps wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_jsonl import AWKWARD, EDGES, FILE, exact

from prep.sources import jsonl as jl
from prep.sources import jsonl_fast as jf
from prep.sources.kinds import JSONL

PATHS = [pytest.param(jf.arrow_texts, id="arrow")]
if jf.COMPILED is not None:
    PATHS.insert(0, pytest.param(jf.native_texts, id="native"))
native = pytest.mark.skipif(jf.COMPILED is None, reason="the extension is not built")
COLUMNS = [("text", None), ("text", "split")]

# Text with what a scanner can get wrong: escapes, NUL and other controls, characters of each
# width (Latin-1, the BMP, astral: a surrogate pair under ensure_ascii), U+2028, a BOM, CRLF.
TRICKY = st.sampled_from(["\\", '"', "/", "\x00", "\x1f", "\x7f", "\b\f\n\r\t", "é", "ÿ",
                          "Ā", "€", "😀", "\U0010ffff", "\u2028", "\ufeff", "\r\n", "a" * 40])
text = st.lists(st.one_of(TRICKY, st.text(max_size=20)), max_size=8).map("".join)
# Values of fields no one reads: any JSON Python writes (no NaN), nested a little.
other = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                               max_size=3), max_leaves=8)


@st.composite
def document(draw: st.DrawFn) -> bytes:
    """One line json.dumps writes: the text, a split, other fields in any order; ASCII with
    escapes or UTF-8; a "\\r" line end (CRLF) or spaces around."""
    ascii_ = draw(st.booleans())
    fields: dict[str, Any] = {"text": draw(text), "split": draw(text)}
    for key in draw(st.lists(st.sampled_from(["n", "meta", "id", ""]), unique=True)):
        fields[key] = draw(other)
    if ascii_ and draw(st.booleans()):
        fields["x"] = "\ud800 lone, not read"  # Python reads a lone surrogate elsewhere
    order = draw(st.permutations(list(fields)))
    line = json.dumps({k: fields[k] for k in order}, ensure_ascii=ascii_,
                      separators=draw(st.sampled_from([(", ", ": "), (",", ":")])))
    return (draw(st.sampled_from(["", " ", "\t"])) + line
            + draw(st.sampled_from(["", "\r", " "]))).encode("utf-8", "surrogatepass")


# Bytes an edit may put anywhere: JSON's own, white space, controls, letters that are no
# escape, and UTF-8 lead and continuation bytes of every kind.
EDIT_BYTES = (b'"\\/{}[],:0129-+.eEnultrfbaxU \t\r\n\x00\x01\x1f\x7f\x80\x8f\x90\x9f'
              b"\xa0\xbf\xc0\xc1\xc2\xc3\xc4\xdf\xe0\xe2\xed\xef\xf0\xf4\xf5\xff")
# One line with something of everything: escapes (a pair among them), raw UTF-8 of each
# width, a split, every kind of value nested in a field no one reads.
ALL_IN_ONE = ('{"text": "a\\n\\u00e9\\ud83d\\ude00\\"\\/é€😀", "split": "v", '
              '"m": {"a": [1, -2.5e+3, 0, true, false, null, "s\\t", {}], "": []}}').encode()


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A good line with one byte deleted, inserted or replaced."""
    line = draw(document())
    at = draw(st.integers(0, len(line)))
    byte = bytes([draw(st.one_of(st.sampled_from(EDIT_BYTES), st.integers(0, 255)))])
    how = draw(st.sampled_from(["delete", "insert", "replace"]))
    if how == "insert":
        return line[:at] + byte + line[at:]
    return line[:at] + (byte if how == "replace" else b"") + line[at + 1:]


def agrees(fast: Callable[..., Any], lines: list[bytes], columns: tuple[str, str | None]
           ) -> Any:
    """``fast``'s answer for the block of ``lines``, checked to be None or the exact one."""
    block = b"\n".join(lines)
    got = fast(block, len(lines), columns)
    if got is not None:
        texts, splits, refusal = exact(block, len(lines), columns, 0, None)
        assert refusal is None, (refusal, got)
        assert got == (texts, splits if columns[1] else None)
        assert [type(t) for t in got[0]] == [str] * len(texts)
    return got


@native
@settings(max_examples=100, deadline=None)
@given(lines=st.lists(st.one_of(document(), mutated(), st.sampled_from(AWKWARD)), min_size=1,
                      max_size=6),
       columns=st.sampled_from(COLUMNS))
def test_the_scanner_answers_only_what_the_lines_give(lines: list[bytes],
                                                      columns: tuple[str, str | None]) -> None:
    agrees(jf.native_texts, lines, columns)


@native
@settings(max_examples=60, deadline=None)
@given(lines=st.lists(document(), min_size=1, max_size=8), columns=st.sampled_from(COLUMNS))
def test_the_scanner_reads_every_block_json_dumps_wrote(lines: list[bytes],
                                                        columns: tuple[str, str | None]) -> None:
    assert agrees(jf.native_texts, lines, columns) is not None


@pytest.mark.soak
@native
@settings(max_examples=20_000, deadline=None)
@given(lines=st.lists(st.one_of(document(), mutated(), st.sampled_from(AWKWARD)), min_size=1,
                      max_size=6),
       columns=st.sampled_from(COLUMNS))
def test_the_scanner_answers_only_what_the_lines_give_at_length(
        lines: list[bytes], columns: tuple[str, str | None]) -> None:
    agrees(jf.native_texts, lines, columns)


@native
@pytest.mark.parametrize("columns", COLUMNS)
def test_every_one_byte_edit_of_a_line_reads_as_python_reads_it(
        columns: tuple[str, str | None]) -> None:
    line, taken = ALL_IN_ONE, 0
    assert agrees(jf.native_texts, [line], columns) is not None
    for at in range(len(line) + 1):
        edits = [line[:at] + line[at + 1:]] if at < len(line) else []
        for byte in EDIT_BYTES:
            edits.append(line[:at] + bytes([byte]) + line[at:])
            edits.append(line[:at] + bytes([byte]) + line[at + 1:])
        for edited in edits:
            taken += agrees(jf.native_texts, [edited], columns) is not None
    assert taken > len(line)  # many edits leave a good line: they are read, not refused


@native
@pytest.mark.parametrize("bad", [
    *(b'"%c"' % c for c in range(0x20)),  # a control byte in a string
    b'"\\a"', b'"\\x41"', b'"\\U0041"', b'"\\u12"', b'"\\u12G4"', b'"\\', b'"a',
    b'"\xed\xa0\x80"', b'"\xed\xbf\xbf"', b'"\xc0\x80"', b'"\xc1\xbf"', b'"\xe0\x80\x80"',
    b'"\xe0\x9f\xbf"', b'"\xf0\x80\x80\x80"', b'"\xf0\x8f\xbf\xbf"', b'"\xf4\x90\x80\x80"',
    b'"\xf5\x80\x80\x80"', b'"\xc3"', b'"\xe2\x82"', b'"\xf0\x9f\x98"', b'"\x80"', b'"\xc3\xc3"',
    b"-", b"01", b"-01", b"1.", b".5", b"1e", b"1e+", b"+1", b"0x1", b"1_0", b"tru", b"nul",
    b"True", b"nan", b"-NaN", b"{,}", b'{"a":1,}', b"[1,]", b"[,1]", b'{"a" 1}',
    b'{"a":}', b"{1: 2}", b"{'a': 1}", b"[1 2]", b"[", b"]", b"}", b"{", b'{"a":1]', b"[1}",
    b"\xef\xbb\xbf1", b"\x0b1", b"\x0c1", b"'s'",
])
def test_what_python_refuses_the_scanner_never_takes(bad: bytes) -> None:
    for line in (b'{"text": "a", "x": ' + bad + b"}", b'{"text": ' + bad + b"}",
                 b'{"text": "a", ' + bad + b': 1}', bad + b'{"text": "a"}'):
        assert exact(line, 1, ("text", None), 0, None)[2] is not None, line
        assert jf.native_texts(line, 1, ("text", None)) is None, line


@pytest.mark.parametrize("fast", PATHS)
def test_a_block_of_good_lines_takes_a_fast_path(fast: Callable[..., Any]) -> None:
    """The common block takes a fast path (and the awkward ones do not)."""
    good = b"\n".join(json.dumps({"text": d, "n": [i]}).encode() for i, d in enumerate(EDGES))
    assert fast(good, len(EDGES), ("text", None)) == (EDGES, None)
    for line in (b"", b"\r", b'{"text": "\\ud800"}', b'{"text": "a", "x": "\xff"}',
                 b'{"text": "a"}{"text": "b"}', b'{"id": 1}'):
        assert fast(good + b"\n" + line, len(EDGES) + 1, ("text", None)) is None
    # A blank line and a line of two objects: as many rows as lines, yet not these rows.
    mixed = good + b'\n\n{"text": "a"}{"text": "b"}'
    assert fast(mixed, len(EDGES) + 2, ("text", None)) is None
    assert exact(mixed, len(EDGES) + 2, ("text", None), 0, None)[2] == (
        f"f.jsonl line {len(EDGES) + 2} (byte {len(good) + 15:,}): not JSON (Extra data); each "
        "line must be one JSON object: fix or remove the line")


@native
@pytest.mark.parametrize(("block", "rows", "columns", "expected"), [
    (b"", 0, ("text", None), ([], None)),
    (b'{"text": "a"}', 2, ("text", None), None),  # not the rows the caller counted
    (b'{"text": "a"}\n', 1, ("text", None), None),
    (b'{"text": "a"}\n{"text": "b"}\n{"text": "c"}', 1, ("text", None), None),
    (b'{"text": "a"}x{"text": "b"}', 2, ("text", None), None),  # not a line end
    (b'{"text": "a"} {"text": "b"}', 1, ("text", None), None),
    (b'{"text": "a", "split": "\\udc00"}', 1, ("text", "split"), None),
    (b'{"text": "a", "text": "b"}', 1, ("text", None), (["b"], None)),  # the last, as Python
    (b'{"text": "a", "text": 1}', 1, ("text", None), None),
    (b'{"t": "a", "s": "\\u00e9\\ud83d\\ude00\\u0000"}', 1, ("t", "s"), (["a"], ["é😀\x00"])),
    (b'{"text": "a", "n": ' + b"1" * 700 + b"}", 1, ("text", None), None),  # past a digit limit
    (b'{"text": "a", "n": 1.' + b"1" * 700 + b"}", 1, ("text", None), (["a"], None)),
    (b'{"metadata": {"text": "m"}}', 1, ("metadata.text", None), None),
    # Python reads these; the scanner leaves them to it.
    *((b'{"text": "a", "x": %s}' % v, 1, ("text", None), None)
      for v in (b"NaN", b"Infinity", b"-Infinity")),
    (b'{"t\\u0065xt": "e"}', 1, ("text", None), None),
    (b'{"text": "a", "t\\u0065xt": "e"}', 1, ("text", None), None),  # "e", as Python reads it
    (b'{"text": "a", "split": "s"}', 1, ("text", ""), None),
])
def test_the_scanner_on_edges(block: bytes, rows: int, columns: tuple[str, str | None],
                              expected: Any) -> None:
    assert jf.native_texts(memoryview(block), rows, columns) == expected


@native
def test_nesting_a_hundred_thousand_levels_deep_is_read_without_recursion() -> None:
    deep = b'{"m": ' + b'[{"a": ' * 100_000 + b"1" + b"}]" * 100_000 + b', "text": "deep"}'
    block = b'{"text": "fine"}\n' + deep
    assert jf.native_texts(block, 2, ("text", None)) == (["fine", "deep"], None)
    assert exact(block, 2, ("text", None), 0, None) == (["fine", "deep"], [None, None], None)
    got = list(jl.block_batches(FILE, JSONL, ("text", None), block, 0, 2, 0, 0, None))
    assert got == [(["fine", "deep"], None)]
    assert jf.native_texts(block[:-20] + b"}", 2, ("text", None)) is None  # one left open


def test_the_compiled_scanner_is_built_here() -> None:
    """The install builds it where a C compiler is (CI has one): without it every block costs
    pyarrow's reader, about twice the CPU."""
    assert jf.COMPILED is not None
