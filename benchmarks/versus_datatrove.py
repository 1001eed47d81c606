"""prep against datatrove's ``JsonlReader`` + ``DocumentTokenizer`` on the same ``.jsonl.zst``
files, as whole processes on the same cores.

The files are the 12 ``.jsonl.zst`` files ``jsonl_inputs.py`` converts from a Parquet corpus
of real text (``make_corpus.py``, default 43 MB). datatrove runs its
``LocalPipelineExecutor`` with one task per file, as many workers as prep
(``--workers``) and ``start_method="fork"``, GPT-2's ``tokenizer.json`` with
``<|endoftext|>`` after each document and no shuffle; prep runs ``scripts/prepare.py``
with its defaults (checkpoints, manifest, run-time cross-check) and ``--workers``. The two
alternate, ``--pairs`` times after a warm-up pair, and ``ratio = median(datatrove) /
median(prep)`` is printed: above 1 prep is faster.

datatrove is not a dependency of prep: install it into a virtual environment of its own and
name that environment's Python, e.g.::

    python -m venv /tmp/dt && /tmp/dt/bin/pip install datatrove tokenizers zstandard orjson
    python benchmarks/versus_datatrove.py --datatrove-python /tmp/dt/bin/python \\
        [--mb 43] [--pairs 3] [--workers 2] [--workdir D]

Prints ``{"bench": "versus_datatrove", ...}`` on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jsonl_inputs import convert
from memory import DEFAULT_TOKENIZER, prepare_command, reusable_corpus, run_measured


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_datatrove(source: str, out: str, workers: int, tokenizer: str) -> None:
    """The datatrove pipeline (run by the datatrove environment's Python)."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    tasks = len(list(Path(source).glob("*.jsonl.zst")))
    LocalPipelineExecutor(
        pipeline=[
            JsonlReader(source, compression="zstd", glob_pattern="*.jsonl.zst"),
            DocumentTokenizer(output_folder=out, tokenizer_name_or_path=tokenizer,
                              eos_token="<|endoftext|>", shuffle_documents=False),
        ],
        tasks=tasks, workers=workers, start_method="fork", logging_dir=f"{out}/logs",
    ).run()


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["run-datatrove"]:
        run_datatrove(argv[1], argv[2], int(argv[3]), argv[4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datatrove-python", required=True)
    ap.add_argument("--mb", type=float, default=43.0)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    work, corpus = reusable_corpus(args.workdir, args.mb, "versus-datatrove-")
    _, packed = convert(corpus, work / f"jsonl-{args.mb:g}mb")
    tok = str(DEFAULT_TOKENIZER)
    prep_out, dt_out = work / "prep-out", work / "datatrove-out"
    times: dict[str, list[float]] = {"prep": [], "datatrove": []}

    def prep() -> None:
        shutil.rmtree(prep_out, ignore_errors=True)
        cmd = prepare_command(packed, tok, prep_out, "--quiet", "--workers", str(args.workers))
        res = run_measured(cmd, work / "prep.log")
        if res.exit_code != 0:
            raise SystemExit(f"prep failed ({res.exit_code}); see {work}/prep.log")
        times["prep"].append(res.seconds)

    def datatrove() -> None:
        shutil.rmtree(dt_out, ignore_errors=True)
        cmd = [args.datatrove_python, __file__, "run-datatrove", str(packed), str(dt_out),
               str(args.workers), tok]
        res = run_measured(cmd, work / "datatrove.log")
        if res.exit_code != 0:
            raise SystemExit(f"datatrove failed ({res.exit_code}); see {work}/datatrove.log")
        times["datatrove"].append(res.seconds)

    log(f"warm-up pair ({work})")
    prep(), datatrove()
    times["prep"].clear(), times["datatrove"].clear()
    for i in range(args.pairs):
        for fn in (prep, datatrove) if i % 2 == 0 else (datatrove, prep):
            fn()
        log(f"pair {i + 1}: prep {times['prep'][-1]:.2f} s, "
            f"datatrove {times['datatrove'][-1]:.2f} s")
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({
        "bench": "versus_datatrove", "mb": args.mb, "workers": args.workers,
        "prep_median_s": round(med["prep"], 2), "datatrove_median_s": round(med["datatrove"], 2),
        "ratio": round(med["datatrove"] / med["prep"], 2),
        "pair_ratios": [round(d / p, 2) for p, d in zip(times["prep"], times["datatrove"],
                                                         strict=True)],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
