"""What ``--pack fixed`` costs against ``--pack whole`` (issue 35's bound: at most 1.05x).

The benchmark:

1. builds ``--mb`` MB of real text with ``make_corpus.py`` (a child process);
2. ``--pairs`` times, the order alternating each round (whole first, then fixed first):
   ``python scripts/prepare.py --source SRC --tokenizer TOK --out OUT --format FMT
   --max-file-tokens N --pack whole|fixed``, each the whole command as a child process,
   timed by its wall clock and by the CPU of its whole process tree;
3. checks that each fixed run's split streams are the whole run's, byte for byte (the ids
   of every file concatenated, read with ``prep.TokenStream``), and that every fixed file
   but a split's last holds exactly N ids; anything else stops the benchmark (exit 1),
   keeping the work directory.

    python benchmarks/packing.py [--mb 100] [--pairs 5] [--format llmc]
                                 [--max-file-tokens 10000000] [--tokenizer PATH]
                                 [--workdir DIR] [--keep]

stdout gets one JSON line::

    {"bench": "packing", "mb", "format", "max_file_tokens", "pairs", "files_whole",
     "files_fixed", "whole_s_median", "fixed_s_median", "ratio", "whole_cpu_s_median",
     "fixed_cpu_s_median", "cpu_ratio", "pair_ratios", "bound": 1.05, "within_bound",
     "identical": true}

``ratio`` is the median of the pairs' fixed/whole wall-clock ratios; ``cpu_ratio`` the
same for CPU seconds (less sensitive to other load on a shared machine).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from incremental import DEFAULT_TOKENIZER, MAKE_CORPUS, PREPARE, REPO, timed
from memory import byte_compile  # as pip install does: no child compiles prep at start
from refresh import BenchmarkError, run
from workdir import remove_made, work_directory

BOUND = 1.05


def log(msg: str) -> None:
    print(f"packing-bench: {msg}", file=sys.stderr, flush=True)


def streams(out: Path, limit: int | None) -> tuple[dict[str, str], int]:
    """(SHA-256 of each split's stream, files); with ``limit``, every file but a split's
    last must hold exactly ``limit`` ids."""
    sys.path.insert(0, str(REPO / "src"))
    from prep import Manifest, TokenStream

    m = Manifest.load(out)
    for split in m.totals:
        files = sorted((f for f in m.files if f.split == split), key=lambda f: f.name)
        short = [f.name for f in files[:-1] if limit is not None and f.n_tokens != limit]
        if short:
            raise BenchmarkError(f"{out}: {short[:3]} are not full ({limit:,} ids)")
    digests = {}
    for split in m.totals:
        ts, sha = TokenStream(out, split, seq_len=1), hashlib.sha256()
        for at in range(0, ts.n_tokens, 1 << 24):
            sha.update(ts.read(at, min(1 << 24, ts.n_tokens - at)).tobytes())
        digests[split] = sha.hexdigest()
    return digests, len(m.files)


def bench(mb: int, pairs: int, fmt: str, limit: int, tokenizer: Path, workdir: Path
          ) -> dict[str, object]:
    byte_compile(PREPARE)
    source = workdir / "src"
    run([sys.executable, str(MAKE_CORPUS), "--out", str(source), "--mb", str(mb)], "make_corpus")
    recipe = ["--source", str(source), "--tokenizer", str(tokenizer), "--format", fmt,
              "--max-file-tokens", str(limit), "--dataset", "bench", "--quiet"]
    wall: dict[str, list[float]] = {"whole": [], "fixed": []}
    cpu: dict[str, list[float]] = {"whole": [], "fixed": []}
    files, expected = {}, None
    for i in range(pairs):
        for pack in ("whole", "fixed") if i % 2 == 0 else ("fixed", "whole"):
            out = workdir / f"{pack}-{i}"
            cmd = [sys.executable, str(PREPARE), *recipe, "--pack", pack, "--out", str(out)]
            seconds, cpus, _ = timed(cmd, f"--pack {pack}")
            wall[pack].append(seconds)
            cpu[pack].append(cpus)
            digests, files[pack] = streams(out, limit if pack == "fixed" else None)
            if expected is None:
                expected = digests
            elif digests != expected:
                raise BenchmarkError(f"{out}: its streams differ from the first run's")
            log(f"pair {i + 1}/{pairs} --pack {pack}: {seconds:.2f} s wall, {cpus:.2f} s CPU, "
                f"{files[pack]} files")
            shutil.rmtree(out)
    ratios = [f / w for f, w in zip(wall["fixed"], wall["whole"], strict=True)]
    cpu_ratios = [f / w for f, w in zip(cpu["fixed"], cpu["whole"], strict=True)]
    ratio = statistics.median(ratios)
    return {
        "bench": "packing", "mb": mb, "format": fmt, "max_file_tokens": limit,
        "pairs": pairs, "files_whole": files["whole"], "files_fixed": files["fixed"],
        "whole_s_median": round(statistics.median(wall["whole"]), 3),
        "fixed_s_median": round(statistics.median(wall["fixed"]), 3),
        "ratio": round(ratio, 4),
        "whole_cpu_s_median": round(statistics.median(cpu["whole"]), 3),
        "fixed_cpu_s_median": round(statistics.median(cpu["fixed"]), 3),
        "cpu_ratio": round(statistics.median(cpu_ratios), 4),
        "pair_ratios": [round(r, 4) for r in ratios],
        "bound": BOUND, "within_bound": ratio <= BOUND, "identical": True,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--format", default="llmc")
    p.add_argument("--max-file-tokens", type=int, default=10_000_000)
    p.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    p.add_argument("--workdir", type=Path)
    p.add_argument("--keep", action="store_true")
    a = p.parse_args(argv)
    workdir = work_directory(a.workdir, "packing-bench-")
    try:
        result = bench(a.mb, a.pairs, a.format, a.max_file_tokens, a.tokenizer, workdir)
    except BenchmarkError as e:
        print(f"packing-bench: {e}; work directory kept: {workdir}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    remove_made(workdir, a.workdir, a.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
