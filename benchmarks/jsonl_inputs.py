"""prep over JSON Lines against prep over Parquet, on the same real text, as whole processes.

It builds (or reuses) a Parquet corpus of real text (``make_corpus.py``, default 500 MB),
converts it to 12 JSON Lines files (``json.dumps(..., ensure_ascii=False)``, one object per
line, the documents in the corpus's order) and compresses each with Debian's ``zstd``
binary (default level 3), as DCLM and SlimPajama ship. Then it alternates three whole
``scripts/prepare.py`` runs on the same cores, ``--rounds`` times, after a warm-up round:
over the Parquet files, over the 12 ``.jsonl.zst`` files and over the 12 plain ``.jsonl``
files, and reports each median, the ratios ``jsonl.zst / parquet`` and ``jsonl / parquet``
(the issue's bound: at most 1.10) of the medians and the median of each round's ratio
(``pair_ratio_median``: the figure that counts on a shared machine), the same ratios of
CPU seconds (user + system of the whole tree: steadier than wall time on a shared
machine), and each run's peak RSS (the
largest single process, and the whole tree's PSS). Before timing, it checks that the three
wrote byte-identical shards.

    python benchmarks/jsonl_inputs.py [--mb 500] [--rounds 3] [--workdir D]
                                      [--prep-args "--workers 2"] [--tokenizer TOK]

Prints ``{"bench": "jsonl_inputs", ...}`` on stdout; progress on stderr. ``convert`` alone
(``python benchmarks/jsonl_inputs.py convert PARQUET_DIR OUT_DIR``) writes ``OUT_DIR/jsonl``
and ``OUT_DIR/zst`` from any Parquet corpus with a ``text`` column.

``floor`` (``python benchmarks/jsonl_inputs.py floor WORKDIR MB``, a work directory the
benchmark left) measures, in one process, the CPU seconds of reading alone, each stage as
prep's worker and main process run it, the best of three: the Parquet files' text columns
to Python strings; the ``.jsonl.zst`` files decompressed into blocks (the main process);
the plain files counted into ranges (the main process); those blocks parsed to the same
strings (the workers; ``fallback_blocks``: how many took the line-by-line parser); each
kind's files hashed (SHA-256 of the bytes as stored, as every run does). What JSON Lines
costs beyond Parquet is then the difference, which no change to how work is spread can
take back: ``floor_zst_s`` (decompressing, parsing and hashing less Parquet's reading and
hashing) and ``floor_jsonl_s`` (counting, parsing and hashing less Parquet's).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, prepare_command, reusable_corpus, run_measured

N_FILES = 12


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def convert(parquet: Path, out: Path, n_files: int = N_FILES) -> tuple[Path, Path]:
    """``out/jsonl/part-NNNNN.jsonl`` (the corpus's documents in order, cut into
    ``n_files`` files of about equal documents) and ``out/zst/part-NNNNN.jsonl.zst`` (each
    compressed by the ``zstd`` binary); reused when both exist."""
    import pyarrow.parquet as pq  # here: the timing process never imports pyarrow

    plain, packed = out / "jsonl", out / "zst"
    if plain.is_dir() and packed.is_dir():
        return plain, packed
    shutil.rmtree(plain, ignore_errors=True)
    shutil.rmtree(packed, ignore_errors=True)
    plain.mkdir(parents=True)
    packed.mkdir(parents=True)
    files = sorted(parquet.glob("*.parquet"))
    total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    per = -(-total // n_files)
    index, in_file, sink = 0, 0, None
    for f in files:
        for batch in pq.ParquetFile(f).iter_batches(columns=["text"], batch_size=4096):
            for text in batch.column(0).to_pylist():
                if sink is None or in_file == per:
                    if sink is not None:
                        sink.close()
                    sink = open(plain / f"part-{index:05d}.jsonl", "w", encoding="utf-8")  # noqa: SIM115
                    index, in_file = index + 1, 0
                sink.write(json.dumps({"text": text, "id": in_file}, ensure_ascii=False) + "\n")
                in_file += 1
    if sink is not None:
        sink.close()
    for p in sorted(plain.glob("*.jsonl")):
        subprocess.run(["zstd", "-q", "-k", str(p), "-o", str(packed / f"{p.name}.zst")],
                       check=True)
    return plain, packed


def floor(work: Path, mb: float) -> dict[str, float]:
    """CPU seconds of the reading stages alone over the benchmark's files (see the module
    docstring), the best of three each."""
    import time

    import pyarrow.parquet as pq  # here: the timing process never imports pyarrow

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # this checkout's
    from prep.sources import jsonl, jsonl_blocks, jsonl_fast, resolve_local
    from prep.sources.base import signature_of
    from prep.sources.kinds import kind_of

    def best(stage: Callable[[], object]) -> float:
        spent = []
        for _ in range(3):
            start = time.process_time()
            stage()
            spent.append(time.process_time() - start)
        return min(spent)

    corpus, files = work / f"corpus-{mb:g}mb", work / f"jsonl-{mb:g}mb"

    def parquet() -> None:
        for p in sorted(corpus.glob("*.parquet")):
            for b in pq.ParquetFile(p, buffer_size=1 << 20).iter_batches(
                    batch_size=4096, columns=["text"], use_threads=False):
                b.column(0).to_pylist()

    def read(kind: str, each: Callable[[Any, Any, Any], object]) -> list[object]:
        src = resolve_local(str(files / kind))
        out = []
        for f in src.files:
            with open(src.local_path(f), "rb") as fobj:
                f.signature = signature_of(fobj)
                out.append(each(fobj, f, kind_of(f.path, fobj)))
        return out

    blocks: list[tuple[Any, Any, Any]] = []

    def unzip() -> None:
        blocks.clear()
        for f, kind, got in read("zst", lambda fobj, f, kind: (f, kind, list(
                jsonl_blocks.blocks(fobj, f, kind)))):  # type: ignore[misc]
            blocks.extend((f, kind, b) for b in got)

    def count() -> None:
        read("jsonl", lambda fobj, f, kind: jsonl_blocks.count_lines(fobj, f, kind, f.size))

    def parse() -> None:
        for f, kind, (first, at, data, rows) in blocks:
            for _ in jsonl.block_batches(f, kind, ("text", None), data, first, rows, at, 0,
                                         None):
                pass

    def hashed(where: Path) -> Callable[[], None]:
        def stage() -> None:
            for p in sorted(q for q in where.iterdir() if q.is_file()):
                h, buffer = hashlib.sha256(), bytearray(1 << 20)
                with p.open("rb", buffering=0) as f:
                    while n := f.readinto(buffer):
                        h.update(memoryview(buffer)[:n])
        return stage

    got = {"parquet_read_s": best(parquet), "zst_blocks_s": best(unzip),
           "jsonl_count_s": best(count), "json_parse_s": best(parse),
           "fallback_blocks": sum(jsonl_fast.fast_texts(data, rows, ("text", None)) is None
                                  for _, _, (_, _, data, rows) in blocks),
           "hash_parquet_s": best(hashed(corpus)), "hash_zst_s": best(hashed(files / "zst")),
           "hash_jsonl_s": best(hashed(files / "jsonl"))}
    got["floor_zst_s"] = (got["zst_blocks_s"] + got["json_parse_s"] + got["hash_zst_s"]
                          - got["parquet_read_s"] - got["hash_parquet_s"])
    got["floor_jsonl_s"] = (got["jsonl_count_s"] + got["json_parse_s"] + got["hash_jsonl_s"]
                            - got["parquet_read_s"] - got["hash_parquet_s"])
    return {k: round(v, 3) for k, v in got.items()}


def _bins(out: Path) -> dict[str, str]:
    """Each shard's SHA-256, read in pieces: this process's peak is folded into every later
    child's ``ru_maxrss`` (see ``memory.py``), so it never holds a run's shards."""
    digests = {}
    for p in sorted(out.glob("*.bin")):
        h = hashlib.sha256()
        with p.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        digests[p.name] = h.hexdigest()
    return digests


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["convert"]:
        plain, packed = convert(Path(argv[1]), Path(argv[2]))
        print(json.dumps({"jsonl": str(plain), "zst": str(packed)}))
        return 0
    if argv[:1] == ["floor"]:
        print(json.dumps({"bench": "jsonl_inputs floor", "mb": float(argv[2]),
                          **floor(Path(argv[1]), float(argv[2]))}))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=500.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--tokenizer", default=str(DEFAULT_TOKENIZER))
    ap.add_argument("--prep-args", default="--workers 2", help="extra prepare options")
    args = ap.parse_args(argv)
    work, corpus = reusable_corpus(args.workdir, args.mb, "jsonl-inputs-")
    converted = work / f"jsonl-{args.mb:g}mb"
    plain, packed = converted / "jsonl", converted / "zst"
    if not (plain.is_dir() and packed.is_dir()):  # in a child: this one never loads pyarrow
        subprocess.run([sys.executable, __file__, "convert", str(corpus), str(converted)],
                       check=True, stdout=subprocess.DEVNULL)
    extra = shlex.split(args.prep_args)
    sources = {"parquet": corpus, "jsonl.zst": packed, "jsonl": plain}
    times: dict[str, list[float]] = {k: [] for k in sources}
    peak: dict[str, list[float]] = {k: [] for k in sources}
    tree: dict[str, list[float]] = {k: [] for k in sources}
    cpu: dict[str, list[float]] = {k: [] for k in sources}

    def prep(kind: str) -> Path:
        out = work / f"out-{kind}"
        for stale in (out, out.with_name(out.name + ".incomplete")):  # an interrupted one's
            shutil.rmtree(stale, ignore_errors=True)
        cmd = prepare_command(sources[kind], args.tokenizer, out, "--quiet", *extra)
        res = run_measured(cmd, work / f"{kind}.log")
        if res.exit_code != 0:
            raise SystemExit(f"prep over {kind} failed ({res.exit_code}); see {work}/{kind}.log")
        times[kind].append(res.seconds)
        peak[kind].append(res.peak_rss_kib / 1024)
        tree[kind].append(res.tree_peak_pss_kib / 1024)
        cpu[kind].append(res.cpu_seconds)
        return out

    log(f"warm-up round and identity check ({work})")
    outs = {kind: prep(kind) for kind in sources}
    reference = _bins(outs["parquet"])
    for kind in ("jsonl.zst", "jsonl"):
        if _bins(outs[kind]) != reference:
            raise SystemExit(f"prep over {kind} wrote other shards than over Parquet")
    for k in sources:
        times[k].clear(), peak[k].clear(), tree[k].clear(), cpu[k].clear()
    order = list(sources)
    for i in range(args.rounds):
        for kind in order[i % 3:] + order[: i % 3]:  # each kind first in turn
            prep(kind)
        log(f"round {i + 1}: " + ", ".join(f"{k} {times[k][-1]:.2f} s" for k in sources))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({
        "bench": "jsonl_inputs", "mb": args.mb, "files": N_FILES, "prep_args": args.prep_args,
        "median_s": {k: round(v, 2) for k, v in med.items()},
        "zst_ratio": round(med["jsonl.zst"] / med["parquet"], 3),
        "jsonl_ratio": round(med["jsonl"] / med["parquet"], 3),
        "cpu_median_s": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
        "zst_cpu_ratio": round(statistics.median(cpu["jsonl.zst"]) / statistics.median(
            cpu["parquet"]), 3),
        "jsonl_cpu_ratio": round(statistics.median(cpu["jsonl"]) / statistics.median(
            cpu["parquet"]), 3),
        "round_ratios": {k: [round(a / b, 3) for a, b in zip(times[k], times["parquet"],
                                                              strict=True)]
                         for k in ("jsonl.zst", "jsonl")},
        "pair_ratio_median": {k: round(statistics.median(
            a / b for a, b in zip(times[k], times["parquet"], strict=True)), 3)
            for k in ("jsonl.zst", "jsonl")},
        "pair_cpu_ratio_median": {k: round(statistics.median(
            a / b for a, b in zip(cpu[k], cpu["parquet"], strict=True)), 3)
            for k in ("jsonl.zst", "jsonl")},
        "peak_rss_mib": {k: round(max(v), 1) for k, v in peak.items()},
        "tree_rss_mib": {k: round(max(v), 1) for k, v in tree.items()},
        "same_shards": True,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
