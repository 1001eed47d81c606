"""The command line: argparse, logging, signals, exit codes. The only place that prints.

``prep prepare ...`` (same as ``python scripts/prepare.py ...``), ``prep verify DIR``,
``prep inspect PATH``. Exit codes: 0 published / complete, 1 error, 2 usage, 75 stopped
early but resumable (signal after a checkpoint, or the lock is held).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from prep.console import Console
from prep.encoders import set_threads
from prep.errors import EXIT_ERROR, EXIT_OK, EXIT_TEMPFAIL, EXIT_USAGE, PrepError
from prep.manifest import PROVENANCE_NAME
from prep.options import inspect_parser
from prep.recipe import DEFAULT_BATCH_SIZE, Recipe, RunOptions

logger = logging.getLogger("prep")

SAMPLE_CORPUS = Path(__file__).resolve().parent / "sample"

# Recipe fields and their CLI defaults (argparse leaves untyped options out entirely).
_RECIPE_DEFAULTS: dict[str, Any] = {
    "source": str(SAMPLE_CORPUS),
    "tokenizer": "byte",
    "text_column": "text",
    "split_column": None,
    "val_fraction": 0.01,
    "seed": 1337,
    "shuffle_files": False,
    "shuffle_buffer": 0,
    "max_documents": None,
    "train_tokens": None,
    "doc_sep_id": None,
    "no_doc_sep": False,
    "sep_position": "prepend",
    "max_file_tokens": 100_000_000,
    "dataset": None,
    "tokenizer_id": None,
}


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be > 0")
    return value


def _int(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def prepare_parser(prog: str = "prepare.py") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Turn Parquet text into llm.c .bin token files, resumably and reproducibly.",
        argument_default=argparse.SUPPRESS,
    )
    p.add_argument("--out", required=True, type=Path, help="the dataset directory to create")
    p.add_argument("--source", help="Parquet file, directory or glob (default: bundled sample)")
    p.add_argument("--text-column", help="text column (default: text)")
    p.add_argument("--split-column", help="take train/val from this column")
    p.add_argument("--tokenizer", help="byte, a tokenizer.json or its directory (default: byte)")
    p.add_argument("--dataset", help="name recorded in the manifest (default: --out's name)")
    p.add_argument("--tokenizer-id", help="tokenizer name recorded in the manifest")
    sep = p.add_mutually_exclusive_group()
    sep.add_argument("--doc-sep-id", type=_int, help="document separator id")
    sep.add_argument("--no-doc-sep", action="store_true", help="no separator")
    p.add_argument("--sep-position", choices=("prepend", "append"))
    p.add_argument("--val-fraction", type=float, help="content-hash val fraction (0.01)")
    p.add_argument("--seed", type=_int, help="split and shuffle seed (1337)")
    p.add_argument("--shuffle-files", action="store_true", help="seeded file shuffle")
    p.add_argument("--shuffle-buffer", type=_int, help="bounded document shuffle buffer (0)")
    p.add_argument("--max-documents", type=_int, help="stop after N source rows")
    p.add_argument("--train-tokens", type=_int, help="stop when train reaches N tokens")
    p.add_argument("--max-file-tokens", type=_int, help="roll over past N tokens (1e8)")
    p.add_argument("--batch-size", type=_int, help=f"documents per batch ({DEFAULT_BATCH_SIZE})")
    p.add_argument("--threads", type=_int, help="tokenizer threads (all cores)")
    p.add_argument("--checkpoint-interval", type=_positive_float, help="seconds (60)")
    p.add_argument("--resume", action="store_true", help="continue DIR.incomplete/")
    p.add_argument(
        "--refresh",
        action="store_true",
        help="for cron: exit 0 if DIR is current, else rebuild and swap it in",
    )
    p.add_argument(
        "--allow-version-change",
        action="store_true",
        help="resume although tokenizers/numpy versions changed",
    )
    p.add_argument("--wait-lock", type=float, help="seconds to wait for another run's lock")
    p.add_argument("--token", help="Hugging Face token (else HF_TOKEN, else cached login)")
    p.add_argument("--log-interval", type=_positive_float, help="seconds between lines (30)")
    p.add_argument("--quiet", action="store_true", help="only errors and the summary")
    return p


def _split_args(ns: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    given = vars(ns)
    typed = {k: v for k, v in given.items() if k in _RECIPE_DEFAULTS}
    run = {k: v for k, v in given.items() if k not in _RECIPE_DEFAULTS}
    return typed, run


class _Signals:
    """First SIGTERM/SIGINT: finish the batch, checkpoint, exit 75. Second SIGINT: abort."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        logger.warning("%s: finishing the current batch, then checkpointing", name)

    @contextmanager
    def installed(self) -> Iterator[None]:
        old = {s: signal.signal(s, self._handle) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)


def _summary(outcome: Any) -> str:
    m = outcome.manifest
    if outcome.status == "up-to-date":
        return f"{outcome.out} is up to date"
    if m is None:
        return f"{outcome.out} is already complete"
    parts = [
        f"{split} {t['n_tokens']:,} tokens / {t['n_docs']:,} docs / {t['n_files']} files"
        for split, t in m["totals"].items()
    ]
    tokens = sum(t["n_tokens"] for t in m["totals"].values())
    seconds = _active_seconds(outcome.out) or outcome.seconds
    rate = f", {tokens / seconds:,.0f} tokens/s" if seconds else ""
    return f"published {outcome.out}: {'; '.join(parts)}; {seconds:,.1f} s{rate}"


def _active_seconds(out: Path) -> float | None:
    """Active time summed over the run and its resumes, from ``_PROVENANCE.json``."""
    try:
        prov = json.loads((out / PROVENANCE_NAME).read_text(encoding="utf-8"))
        return float(prov["active_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run_prepare(argv: list[str], prog: str = "prepare.py") -> int:
    """``prepare`` with its own argv; returns the exit code."""
    try:
        ns = prepare_parser(prog).parse_args(argv)
    except SystemExit as e:  # argparse already printed the usage error
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    typed, run_args = _split_args(ns)
    console = Console(
        sys.stderr, bool(run_args.get("quiet")), run_args.get("log_interval", 30.0)
    )
    with console:
        return _prepare(typed, run_args, argv, console)


def _prepare(
    typed: dict[str, Any], run_args: dict[str, Any], argv: list[str], console: Console
) -> int:
    from prep.pipeline import run

    try:
        recipe = Recipe(**{**_RECIPE_DEFAULTS, **typed})
        opts = RunOptions(
            out=run_args["out"],
            batch_size=run_args.get("batch_size", DEFAULT_BATCH_SIZE),
            threads=run_args.get("threads"),
            checkpoint_interval=run_args.get("checkpoint_interval", 60.0),
            resume=bool(run_args.get("resume")),
            refresh=bool(run_args.get("refresh")),
            allow_version_change=bool(run_args.get("allow_version_change")),
            log_interval=run_args.get("log_interval", 30.0),
            quiet=bool(run_args.get("quiet")),
            wait_lock=run_args.get("wait_lock", 0.0),
            token=run_args.get("token") or os.environ.get("HF_TOKEN"),
        )
        set_threads(opts.threads)
        signals = _Signals()
        with signals.installed():
            outcome = run(
                recipe,
                opts,
                typed=typed,
                stop_requested=signals,
                argv=list(argv),
                reporter=console.reporter,
            )
    except PrepError as e:
        # Exit 75 is not a failure: the run stopped where it can be resumed, or waits.
        kind = "stopped" if e.exit_code == EXIT_TEMPFAIL else "error"
        console.message(f"prep: {kind}: {e}")
        return e.exit_code
    except KeyboardInterrupt:
        console.message(
            "prep: aborted by a second interrupt; rerun with --resume to continue from "
            "the last checkpoint"
        )
        return 130
    console.summary(_summary(outcome))
    return EXIT_OK


def run_verify(argv: list[str]) -> int:
    from prep.verify import verify_dataset

    p = argparse.ArgumentParser(prog="prep verify", description="Verify a published dataset.")
    p.add_argument("dir", type=Path)
    try:
        ns = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    if not ns.dir.is_dir():
        print(f"prep: error: {ns.dir} is not a directory", file=sys.stderr)
        return EXIT_ERROR
    problems = verify_dataset(ns.dir)
    for line in problems:
        print(f"FAIL {line}")
    if problems:
        print(f"{ns.dir}: {len(problems)} problem(s)")
        return EXIT_ERROR
    print(f"{ns.dir}: OK")
    return EXIT_OK


def run_inspect(argv: list[str]) -> int:
    from prep.inspector import inspect_path

    try:
        ns = inspect_parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    try:
        for line in inspect_path(ns.path, first=ns.first, tokenizer=ns.tokenizer):
            if line.startswith("warning: "):
                print(f"prep: {line}", file=sys.stderr)
            else:
                print(line)
    except (PrepError, OSError) as e:
        print(f"prep: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


_COMMANDS = {"prepare": run_prepare, "verify": run_verify, "inspect": run_inspect}


def main(argv: list[str] | None = None) -> int:
    """``prep COMMAND ...``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in _COMMANDS:
        print(
            "usage: prep {prepare,verify,inspect} ...\n"
            "  prepare  build a dataset (same as scripts/prepare.py)\n"
            "  verify   re-check a published dataset\n"
            "  inspect  describe a .bin file, a dataset or a staging directory",
            file=sys.stderr,
        )
        return EXIT_OK if args and args[0] in ("-h", "--help") else EXIT_USAGE
    if args[0] == "prepare":
        return run_prepare(args[1:], prog="prep prepare")
    return _COMMANDS[args[0]](args[1:])


def main_entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
