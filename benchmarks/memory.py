"""Peak memory of a real ``scripts/prepare.py`` run on an N MB and a 10·N MB corpus.

Guarantee 7 of the product spec says peak memory does not grow with the corpus size. This
benchmark checks it end to end: it builds two corpora (N and 10·N MB of UTF-8 text, 1 MB =
10**6 bytes) of real text with ``make_corpus.build_corpus``, or with ``--corpus words`` of
ever-new words (hex strings, URLs, identifiers: ``new_words.build_corpus``, the worst case
for a tokenizer's word cache), then runs, for each, as a real child process::

    python scripts/prepare.py --source CORPUS --tokenizer TOK --out WORKDIR/out-N

and reads the child's peak resident set size from ``os.wait4`` (``ru_maxrss``, KiB on
Linux): the kernel's exact high-water mark of that process (and any children it waited
for), not a sampled value.

One Linux subtlety decides the design: at ``exec`` the kernel folds the peak RSS of the
address space being replaced (after ``fork``/``vfork``, the parent's, over the parent's
whole life so far) into the child's ``ru_maxrss``. A child's figure is therefore never below
its parent's own peak. So this process stays small: it never imports pyarrow, and builds
the corpora in a separate ``spawn`` process (``make_corpus.build_corpus`` is imported
there). Its own peak, the floor of the measurement (~20 MiB), is printed on stderr.

A run that exits non-zero stops the benchmark (exit 1) with the command, exit code and the
tail of its output; the work directory is then kept.

Run from anywhere (defaults: N = 10, the GPT-2 ``tokenizer.json`` fixture, a temporary
work directory removed at the end)::

    python benchmarks/memory.py [--mb N] [--corpus text|words] [--tokenizer PATH]
                                [--workdir DIR] [--keep] [--build-only]
                                [--recycle-workers BYTES] [--worker-memory BYTES]

A corpus already in ``--workdir`` (``corpus-<kind>-<N>mb``, from an earlier ``--keep`` or
``--build-only`` run) is reused: a 10·N MB corpus can take minutes to build, which need not
happen under a lock held for measuring.

Progress goes to stderr; stdout gets one JSON line::

    {"bench": "memory", "corpus", "recycle_workers", "worker_memory", "small_mb", "large_mb",
     "small_peak_rss_mib",
     "large_peak_rss_mib", "ratio", "small_tree_pss_mib", "large_tree_pss_mib", "tree_ratio",
     "small_tokens", "large_tokens"}

With worker processes (the default: one per core) the figure that counts is the whole
tree's: ``tree_ratio`` is large / small peak of the summed PSS of prepare and its workers,
sampled every 50 ms by ``TreeSampler`` (psutil).

``ratio`` is large / small peak RSS: near 1.0 means memory is bounded; near 10 means it
grows with the corpus. Tokens are the sum over splits of ``totals[split]["n_tokens"]`` in
the published ``_MANIFEST.json``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PREPARE = REPO / "scripts" / "prepare.py"
DEFAULT_TOKENIZER = REPO / "tests" / "fixtures" / "gpt2" / "tokenizer.json"
TAIL_LINES = 30


class BenchmarkError(RuntimeError):
    """The benchmark cannot go on; the message says what failed and where to look."""


@dataclass(frozen=True)
class RunResult:
    """One finished child: exit code, peak RSS (KiB, from ``ru_maxrss``: the largest single
    process of its tree), wall seconds, and the peak of the whole tree's summed PSS (KiB,
    sampled every 50 ms: prep's worker processes share pages with the main process, which
    PSS divides among them instead of counting them once per process)."""

    exit_code: int
    peak_rss_kib: int
    seconds: float
    tree_peak_pss_kib: int = 0
    cpu_seconds: float = 0.0  # user + system of the child and every process it waited for
    tree_parts_kib: tuple[int, ...] = ()  # each process's PSS at the tree's peak, root first


class TreeSampler:
    """Samples the summed PSS of a process and its descendants until stopped; ``parts`` is
    each process's PSS (KiB) in the sample of the peak: the root first, then its
    descendants (prep's workers, and with ``--recycle-workers`` the zygote) in psutil's
    order."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        import threading

        self.pid, self.every, self.peak_kib = pid, every, 0
        self.parts: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self._stop.wait(self.every):
            try:
                parts = [root.memory_full_info().pss // 1024]  # the root first, always
                children = root.children(recursive=True)
            except psutil.Error:
                return
            for p in children:
                try:
                    parts.append(p.memory_full_info().pss // 1024)
                except psutil.Error:
                    continue
            if sum(parts) > self.peak_kib:
                self.peak_kib, self.parts = sum(parts), parts

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kib


def byte_compile(script: Path = PREPARE) -> None:
    """Write the bytecode of the package beside ``script`` (``src/prep``) once, as ``pip
    install`` does for an installed package: an editable checkout run with
    ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module at every start, ~0.1 s
    that no installed prep pays."""
    package = script.resolve().parent.parent / "src" / "prep"
    if package.is_dir():
        compileall.compile_dir(str(package), quiet=1)


def prepare_command(
    corpus: Path, tokenizer: str | Path, out: Path, *extra: str, script: Path = PREPARE
) -> list[str]:
    """``python scripts/prepare.py --source CORPUS --tokenizer TOK --out OUT EXTRA...``
    (with the package's bytecode written, see :func:`byte_compile`)."""
    byte_compile(script)
    return [
        sys.executable,
        str(script),
        "--source",
        str(corpus),
        "--tokenizer",
        str(tokenizer),
        "--out",
        str(out),
        *extra,
    ]


def run_measured(cmd: list[str], log: Path) -> RunResult:
    """Run ``cmd`` (stdout and stderr to ``log``) and return its exit code and peak RSS.

    The child is reaped with ``os.wait4``, so ``ru_maxrss`` is its exact peak; no polling.
    """
    start = time.perf_counter()
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, cwd=REPO)
        sampler = TreeSampler(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
    tree_kib = sampler.stop()
    parts = tuple(sampler.parts)
    exit_code = os.waitstatus_to_exitcode(status)
    proc.returncode = exit_code  # already reaped: keep Popen from waiting on a stale pid
    return RunResult(exit_code, usage.ru_maxrss, time.perf_counter() - start, tree_kib,
                     usage.ru_utime + usage.ru_stime, parts)


def manifest_tokens(out: Path) -> int:
    """Sum of ``n_tokens`` over the splits in ``out/_MANIFEST.json``'s ``totals``."""
    path = out / "_MANIFEST.json"
    try:
        totals = json.loads(path.read_text(encoding="utf-8"))["totals"]
        return sum(int(split["n_tokens"]) for split in totals.values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BenchmarkError(f"{path}: cannot read totals.*.n_tokens ({exc!r})") from exc


def _build_corpus(out: str, mb: float, kind: str = "text") -> tuple[int, int, int]:
    """In a child process: ``build_corpus(out, mb)`` of real text (``make_corpus``) or of
    ever-new words (``new_words``), as (text bytes, docs, files)."""
    if kind == "words":  # imported here, not at the top: see the module docstring
        from new_words import build_corpus
    else:
        from make_corpus import build_corpus

    stats = build_corpus(Path(out), mb)
    return stats.text_bytes, stats.docs, stats.files


def build_corpus_isolated(out: Path, mb: float, kind: str = "text") -> tuple[int, int, int]:
    """Build the corpus in a fresh ``spawn`` process, so this process's peak RSS stays low.

    Returns (text bytes, docs, files); exceptions of ``build_corpus`` propagate.
    """
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_build_corpus, str(out), mb, kind).result()


def corpus_stats(corpus: Path) -> tuple[int, int, int]:
    """(text bytes, docs, files) of a corpus built earlier, read from its Parquet files in
    a ``spawn`` process (this one never imports pyarrow)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_stats, str(corpus)).result()


def _stats(corpus: str) -> tuple[int, int, int]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = sorted(Path(corpus).glob("*.parquet"))
    size = docs = 0
    for f in files:
        column = pq.read_table(f, columns=["text"]).column("text")
        size += pc.sum(pc.binary_length(column)).as_py() or 0
        docs += len(column)
    return size, docs, len(files)


def reusable_corpus(workdir: Path | None, mb: float, prefix: str) -> tuple[Path, Path]:
    """(work directory, corpus of ``mb`` MB in it): ``workdir`` (kept, its corpus reused
    when already built) or a new temporary directory."""
    work = workdir or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"corpus-{mb:g}mb"
    if not corpus.exists():
        print(f"building a {mb:g} MB corpus in {corpus}", file=sys.stderr, flush=True)
        build_corpus_isolated(corpus, mb)
    return work, corpus


def own_peak_rss_mib() -> float:
    """This process's peak RSS so far: the floor under any child's ``ru_maxrss``."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _tail(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-TAIL_LINES:])


def corpus_path(workdir: Path, mb: float, kind: str) -> Path:
    """Where the ``mb`` MB corpus of ``kind`` lives in ``workdir``."""
    return workdir / f"corpus-{kind}-{mb:g}mb"


def measure(mb: float, tokenizer: str, workdir: Path, *extra: str, kind: str = "text"
            ) -> tuple[RunResult, int]:
    """Build an ``mb`` MB corpus of ``kind`` in ``workdir`` (or reuse the one there),
    prepare it, return the run and its tokens.

    Raises ``BenchmarkError`` if the output path already exists, or the run exits non-zero
    (the message holds the command, the exit code and the tail of the run's output).
    """
    label = f"{mb:g}"
    corpus, out, log = (
        corpus_path(workdir, mb, kind),
        workdir / f"out-{label}",
        workdir / f"prepare-{label}.log",
    )
    if out.exists():
        raise BenchmarkError(f"{out} already exists; use a fresh --workdir or remove it")
    start = time.perf_counter()
    if corpus.exists():
        text_bytes, docs, files = corpus_stats(corpus)
    else:
        text_bytes, docs, files = build_corpus_isolated(corpus, mb, kind)
    print(
        f"memory: corpus {corpus}: {text_bytes / 1e6:,.1f} MB, {docs:,} docs, "
        f"{files} files, {time.perf_counter() - start:.1f} s; "
        f"floor (this process's peak RSS) {own_peak_rss_mib():,.1f} MiB",
        file=sys.stderr,
    )
    cmd = prepare_command(corpus, tokenizer, out, *extra)
    result = run_measured(cmd, log)
    if result.exit_code != 0:
        raise BenchmarkError(
            f"command failed with exit code {result.exit_code}: {' '.join(cmd)}\n"
            f"--- last {TAIL_LINES} lines of {log} ---\n{_tail(log)}"
        )
    tokens = manifest_tokens(out)
    print(
        f"memory: prepare {label} MB: peak RSS {result.peak_rss_kib / 1024:,.1f} MiB "
        f"(whole tree, PSS: {result.tree_peak_pss_kib / 1024:,.1f} MiB; per process at that "
        f"peak, main first: {' + '.join(f'{k / 1024:.0f}' for k in result.tree_parts_kib)}), "
        f"{tokens:,} tokens, {result.seconds:.1f} s "
        f"({text_bytes / 1e6 / result.seconds:.2f} MB/s)",
        file=sys.stderr,
    )
    return result, tokens


def _tokenizer_arg(value: str | None) -> str:
    if value is None:
        path = DEFAULT_TOKENIZER
    elif value == "byte" or value.startswith("hf:"):
        return value
    else:
        path = Path(value).resolve()
    if not path.exists():
        raise BenchmarkError(f"tokenizer {path} not found; pass --tokenizer PATH")
    return str(path)


def main(argv: list[str] | None = None) -> int:
    """CLI: measure both sizes, print the JSON line; exit 1 with a message on failure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mb",
        type=float,
        default=10.0,
        help="small corpus size in MB; the large one is 10x (default: 10)",
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="tokenizer.json path, 'byte' or hf:NAME "
        f"(default: {DEFAULT_TOKENIZER.relative_to(REPO)})",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where corpora and outputs go (default: a new temporary directory)",
    )
    parser.add_argument("--keep", action="store_true", help="keep corpora and outputs")
    parser.add_argument("--recycle-workers", metavar="BYTES", default=None,
                        help="pass --recycle-workers BYTES to both runs (default: not given)")
    parser.add_argument("--worker-memory", metavar="BYTES", default=None,
                        help="pass --worker-memory BYTES to both runs (default: not given)")
    parser.add_argument("--corpus", choices=("text", "words"), default="text",
                        help="real text (make_corpus.py) or ever-new words (new_words.py)")
    parser.add_argument("--build-only", action="store_true",
                        help="build both corpora in --workdir (kept), measure nothing")
    args = parser.parse_args(argv)
    if not args.mb > 0:
        parser.error("--mb must be > 0")

    try:
        if not PREPARE.exists():
            raise BenchmarkError(f"{PREPARE} not found")
        tokenizer = _tokenizer_arg(args.tokenizer)
    except BenchmarkError as exc:
        print(f"memory: {exc}", file=sys.stderr)
        return 1
    if args.workdir is None:
        workdir = Path(tempfile.mkdtemp(prefix="prep-memory-"))
    else:
        workdir = args.workdir.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    created = [workdir] if args.workdir is None else []
    small_mb, large_mb = args.mb, 10 * args.mb
    if args.build_only:
        for mb in (small_mb, large_mb):
            corpus = corpus_path(workdir, mb, args.corpus)
            if not corpus.exists():
                build_corpus_isolated(corpus, mb, args.corpus)
            print(f"memory: corpus {corpus} ready", file=sys.stderr)
        return 0
    try:
        extra: list[str] = []
        for flag, value in (("--recycle-workers", args.recycle_workers),
                            ("--worker-memory", args.worker_memory)):
            extra += [] if value is None else [flag, value]
        small, small_tokens = measure(small_mb, tokenizer, workdir, *extra, kind=args.corpus)
        large, large_tokens = measure(large_mb, tokenizer, workdir, *extra, kind=args.corpus)
    except BenchmarkError as exc:
        print(f"memory: {exc}\nmemory: work directory kept: {workdir}", file=sys.stderr)
        return 1
    if not args.keep:
        for label in (f"{small_mb:g}", f"{large_mb:g}"):
            for name in (f"corpus-{args.corpus}-{label}mb", f"out-{label}",
                         f"out-{label}.incomplete"):
                shutil.rmtree(workdir / name, ignore_errors=True)
            for name in (f"prepare-{label}.log", f"out-{label}.lock"):
                (workdir / name).unlink(missing_ok=True)
        for path in created:
            shutil.rmtree(path, ignore_errors=True)
    else:
        print(f"memory: kept {workdir}", file=sys.stderr)
    small_mib, large_mib = small.peak_rss_kib / 1024, large.peak_rss_kib / 1024
    print(
        json.dumps(
            {
                "bench": "memory",
                "corpus": args.corpus,
                "recycle_workers": args.recycle_workers,
                "worker_memory": args.worker_memory,
                "small_mb": small_mb,
                "large_mb": large_mb,
                "small_peak_rss_mib": round(small_mib, 1),
                "large_peak_rss_mib": round(large_mib, 1),
                "ratio": round(large_mib / small_mib, 3),
                "small_tree_pss_mib": round(small.tree_peak_pss_kib / 1024, 1),
                "large_tree_pss_mib": round(large.tree_peak_pss_kib / 1024, 1),
                "tree_ratio": round(large.tree_peak_pss_kib / max(small.tree_peak_pss_kib, 1), 3),
                "small_tokens": small_tokens,
                "large_tokens": large_tokens,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
