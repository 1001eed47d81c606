"""Build a benchmark corpus of real text as Parquet files, offline.

Usage::

    python benchmarks/make_corpus.py --out /tmp/corpus --mb 200 [--seed 0]

writes ``DIR/part-00000.parquet``, ``part-00001.parquet``, ... (one string column ``text``,
zstd, row groups of 1,000 rows, a new file after ~64 MB of text) until ``--mb`` MB
(1 MB = 1,000,000 bytes of UTF-8 text, counted per document; the document that crosses the
target is the last one) have been written, then prints one JSON line
``{"out", "files", "docs", "text_mb"}``. ``--out`` must be missing or empty.

Text: the docstrings and comments of the Python standard library, man pages, the files of
``/usr/share/doc``, license texts and package READMEs, all read from this machine (nothing
is downloaded); see ``text_sources.py`` for what is taken from where and in which order.
On the reference machine that is ~156 MB of distinct text, read at ~20 MB/s.

Documents: a file's text is cut into paragraphs at blank lines (paragraphs over 32 KB are cut
at line ends), and consecutive paragraphs of one file are grouped until a size drawn
log-uniformly between 200 B and 40 KB is reached; a tail under 100 B joins the previous
document. The documents then pass through a shuffle buffer of 8,192 documents, so a big
file's documents are spread out instead of filling whole row groups. Together with the
stationary source mix (``text_sources.py``) this makes the corpus statistically the same
from start to end: a 10 MB and a 100 MB corpus differ in size, not in kind.

Repeats: when every source file has been used and the target is not reached, further passes
reuse the same files, but pass ``k`` (1, 2, ...) takes them in a new seeded order, rotates
each file's paragraphs (or, for a one-paragraph file, its lines) by a random non-zero offset,
so the text wraps around from its end to its start, and regroups it with fresh size draws.
Documents of different passes therefore start and end at different places; only a
one-line file repeats byte for byte, and the corpus is never a copy of itself.

Deterministic: the same machine (same files), arguments and pyarrow version give
byte-identical Parquet files. Cost: 200 MB take ~10-15 s and ~430 MB of RSS (the distinct
paragraphs are kept in memory for the repeat passes), so a caller that measures its own
children's memory should build corpora in a separate process (as ``memory.py`` does).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from text_sources import iter_source_paragraphs

MB = 1_000_000
DEFAULT_MB = 200.0
FILE_TEXT_BYTES = 64 * MB
ROW_GROUP_ROWS = 1000
MIN_DOC_BYTES = 100
DOC_TARGET_RANGE = (200, 40_000)
SHUFFLE_BUFFER_DOCS = 8192

SCHEMA = pa.schema([("text", pa.string())])


@dataclass(frozen=True)
class CorpusStats:
    """What :func:`build_corpus` wrote.

    ``text_bytes`` counts the documents' UTF-8 bytes; ``passes`` is 1 when the sources
    sufficed, more when repeats (see the module docstring) were needed.
    """

    out: Path
    files: int
    docs: int
    text_bytes: int
    passes: int

    def to_json(self) -> dict[str, object]:
        """The summary line's fields (``text_mb`` in units of 1,000,000 bytes)."""
        return {
            "out": str(self.out),
            "files": self.files,
            "docs": self.docs,
            "text_mb": round(self.text_bytes / MB, 3),
        }


# --- documents -------------------------------------------------------------------------


def group_documents(paras: Iterable[str], rng: random.Random) -> Iterator[str]:
    """Join consecutive paragraphs into documents of log-uniform target sizes.

    Guarantees: every paragraph is used exactly once, in order, joined by a blank line;
    a final group under 100 bytes is appended to the previous document (if any).
    """
    low, high = math.log(DOC_TARGET_RANGE[0]), math.log(DOC_TARGET_RANGE[1])
    held: str | None = None
    group: list[str] = []
    size = 0
    target = math.exp(rng.uniform(low, high))
    for para in paras:
        group.append(para)
        size += len(para) + 2
        if size >= target:
            if held is not None:
                yield held
            held = "\n\n".join(group)
            group, size = [], 0
            target = math.exp(rng.uniform(low, high))
    if group:
        tail = "\n\n".join(group)
        if held is not None and len(tail.encode()) < MIN_DOC_BYTES:
            held = f"{held}\n\n{tail}"
        else:
            if held is not None:
                yield held
            held = tail
    if held is not None:
        yield held


def shuffle_buffer(items: Iterable[str], size: int, rng: random.Random) -> Iterator[str]:
    """Bounded-buffer shuffle: each item is yielded exactly once, at most ``size`` held.

    Every held item is equally likely to go next, so a run of items from one big file is
    spread over several times ``size`` items of output.
    """
    buf: list[str] = []
    for item in items:
        if len(buf) < size:
            buf.append(item)
            continue
        i = rng.randrange(size)
        yield buf[i]
        buf[i] = item
    rng.shuffle(buf)
    yield from buf


def rotated(paras: list[str], rng: random.Random) -> list[str]:
    """``paras`` rotated by a random non-zero number of paragraphs (of lines, if just one).

    The text wraps around from its end to its start; only a one-line file is unchanged.
    """
    if len(paras) > 1:
        shift = rng.randrange(1, len(paras))
        return paras[shift:] + paras[:shift]
    lines = paras[0].split("\n")
    if len(lines) > 1:
        shift = rng.randrange(1, len(lines))
        return ["\n".join(lines[shift:] + lines[:shift])]
    return paras


class DocumentStream:
    """An endless, deterministic stream of documents: pass 0 over the sources, then repeats.

    Iterating yields documents forever (see the module docstring for how passes 1, 2, ...
    vary), through a shuffle buffer of 8,192 documents; it raises ``RuntimeError`` if this
    machine has no source text at all. ``passes`` is the number of passes begun so far,
    ``distinct_chars`` the characters of paragraphs read from sources so far.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.passes = 0
        self.distinct_chars = 0
        self._files: list[list[str]] = []

    def __iter__(self) -> Iterator[str]:
        rng = random.Random(f"{self.seed}:shuffle")
        return shuffle_buffer(self._unshuffled(), SHUFFLE_BUFFER_DOCS, rng)

    def _unshuffled(self) -> Iterator[str]:
        self.passes = 1
        for index, paras in enumerate(iter_source_paragraphs(self.seed)):
            self._files.append(paras)
            self.distinct_chars += sum(len(p) for p in paras)
            yield from group_documents(paras, random.Random(f"{self.seed}:0:{index}"))
        if not self._files:
            raise RuntimeError("no source text found (stdlib, /usr/share/man, /usr/share/doc)")
        while True:
            k = self.passes
            self.passes += 1
            order = list(range(len(self._files)))
            random.Random(f"{self.seed}:order:{k}").shuffle(order)
            for index in order:
                rng = random.Random(f"{self.seed}:{k}:{index}")
                yield from group_documents(rotated(self._files[index], rng), rng)


# --- writing ---------------------------------------------------------------------------


def build_corpus(out: Path, mb: float = DEFAULT_MB, seed: int = 0) -> CorpusStats:
    """Write ``out/part-NNNNN.parquet`` until ``mb`` MB of document text are written.

    Creates ``out`` (and parents); raises ``FileExistsError`` if it exists and is not
    empty, ``ValueError`` if ``mb`` is not positive. Files are rolled over at row-group
    boundaries once they hold 64 MB of text. Deterministic (see the module docstring).
    """
    stream = DocumentStream(seed)
    stats = write_documents(out, mb, stream)
    return CorpusStats(stats.out, stats.files, stats.docs, stats.text_bytes, stream.passes)


def write_documents(out: Path, mb: float, documents: Iterable[str]) -> CorpusStats:
    """Write ``documents`` as ``out/part-NNNNN.parquet`` (the layout of the module
    docstring) until ``mb`` MB of their text are written; ``passes`` is 1. Raises as
    :func:`build_corpus` does."""
    if not mb > 0:
        raise ValueError(f"--mb must be > 0, got {mb}")
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    target = int(mb * MB)
    total = docs = files = 0
    writer: pq.ParquetWriter | None = None
    file_bytes = 0
    rows: list[str] = []

    def flush() -> None:
        nonlocal writer, files, file_bytes
        if writer is None:
            writer = pq.ParquetWriter(out / f"part-{files:05d}.parquet", SCHEMA, compression="zstd")
            files += 1
        writer.write_table(
            pa.table({"text": pa.array(rows, pa.string())}, schema=SCHEMA),
            row_group_size=ROW_GROUP_ROWS,
        )
        rows.clear()
        if file_bytes >= FILE_TEXT_BYTES:
            writer.close()
            writer, file_bytes = None, 0

    try:
        for doc in documents:
            n = len(doc.encode("utf-8"))
            rows.append(doc)
            total += n
            file_bytes += n
            docs += 1
            if total >= target:
                break
            if len(rows) == ROW_GROUP_ROWS:
                flush()
        if rows:
            flush()
    finally:
        if writer is not None:
            writer.close()
    return CorpusStats(out=out, files=files, docs=docs, text_bytes=total, passes=1)


def run_cli(prog: str, doc: str, build: Callable[[Path, float, int], CorpusStats],
            argv: list[str] | None = None) -> int:
    """A corpus builder's command line (``--out``, ``--mb``, ``--seed``): build, print the
    JSON summary line; exit 1 on a refused ``--out``."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output directory (new or empty)")
    parser.add_argument(
        "--mb",
        type=float,
        default=DEFAULT_MB,
        help="MB (10**6 bytes) of UTF-8 text to write (default: 200)",
    )
    parser.add_argument("--seed", type=int, default=0, help="RNG seed (default: 0)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        stats = build(args.out, args.mb, args.seed)
    except (FileExistsError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - start
    print(
        f"{prog}: {stats.text_bytes / MB:,.1f} MB, {stats.docs:,} docs, "
        f"{stats.passes} pass(es) over the sources, {seconds:.1f} s",
        file=sys.stderr,
    )
    print(json.dumps(stats.to_json()))
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI: build the corpus, print the JSON summary line; exit 1 on a refused ``--out``."""
    return run_cli("make_corpus", __doc__ or "", build_corpus, argv)


if __name__ == "__main__":
    sys.exit(main())
