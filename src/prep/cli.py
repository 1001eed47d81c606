"""The command line: argparse, logging, signals, exit codes. The only place that prints.

``prep prepare ...`` (same as ``python scripts/prepare.py ...``), ``prep verify DIR``,
``prep inspect PATH``. Exit codes: 0 published / complete, 1 error, 2 usage, 75 stopped
early but resumable (signal after a checkpoint, or the lock is held).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from prep.console import Console, summary_line
from prep.errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_TEMPFAIL,
    EXIT_USAGE,
    InputError,
    PrepError,
    UsageError,
)
from prep.executors import EXECUTORS
from prep.formats import DTYPES, FORMAT_NAMES
from prep.recipe import RECIPE_FIELDS, Recipe, RunOptions, validate

logger = logging.getLogger("prep")


def _defaults(cls: type[Any]) -> dict[str, Any]:
    """A dataclass's field defaults: the one source of the CLI's defaults."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


RECIPE = _defaults(Recipe)
RUN = _defaults(RunOptions)


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


def _format_options(p: argparse.ArgumentParser) -> None:
    """How the ids are laid out: separator position, container, id dtype."""
    p.add_argument("--sep-position", choices=("prepend", "append"))
    p.add_argument(
        "--format",
        choices=FORMAT_NAMES,
        help=f"output container (default: {RECIPE['format']}); see docs/format.md",
    )
    p.add_argument(
        "--dtype", choices=DTYPES, help="id dtype (default auto: the narrowest that fits V)"
    )


def prepare_parser(prog: str = "prepare.py") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Turn Parquet text into llm.c .bin token files, resumably and reproducibly.",
        argument_default=argparse.SUPPRESS,
    )
    p.add_argument("--out", required=True, type=Path, help="the dataset directory to create")
    p.add_argument(
        "--source",
        help="Parquet file, directory or glob, hf://datasets/OWNER/NAME, or `sample` (the "
        "bundled sample corpus); required unless --resume continues a run",
    )
    p.add_argument("--text-column", help=f"text column (default: {RECIPE['text_column']})")
    p.add_argument("--split-column", help="take train/val from this column")
    p.add_argument(
        "--tokenizer",
        help="a tokenizer.json or its directory, hf:OWNER/NAME, or `byte` (UTF-8 bytes); "
        "required unless --resume continues a run",
    )
    p.add_argument("--dataset", help="name recorded in the manifest (default: --out's name)")
    p.add_argument("--tokenizer-id", help="tokenizer name recorded in the manifest")
    sep = p.add_mutually_exclusive_group()
    sep.add_argument(
        "--doc-sep-id",
        type=_int,
        help="document separator id (default: the eos of generation_config.json, else of "
        "tokenizer_config.json, beside tokenizer.json)",
    )
    sep.add_argument("--no-doc-sep", action="store_true", help="no separator between documents")
    _format_options(p)
    p.add_argument(
        "--val-fraction", type=float, help=f"content-hash val fraction ({RECIPE['val_fraction']})"
    )
    p.add_argument("--seed", type=_int, help=f"split and shuffle seed ({RECIPE['seed']})")
    p.add_argument("--shuffle-files", action="store_true", help="seeded file shuffle")
    p.add_argument(
        "--shuffle-buffer",
        type=_int,
        help=f"bounded document shuffle buffer ({RECIPE['shuffle_buffer']})",
    )
    p.add_argument("--max-documents", type=_int, help="stop after N source rows")
    p.add_argument("--train-tokens", type=_int, help="stop when train reaches N tokens")
    p.add_argument(
        "--max-file-tokens",
        type=_int,
        help=f"roll over past N tokens ({RECIPE['max_file_tokens']:.0e})".replace("e+0", "e"),
    )
    p.add_argument("--batch-size", type=_int, help=f"documents per batch ({RUN['batch_size']})")
    p.add_argument("--threads", type=_int, help="tokenizer threads (all cores)")
    p.add_argument(
        "--checkpoint-interval",
        type=_positive_float,
        help=f"seconds ({RUN['checkpoint_interval']:g})",
    )
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
    p.add_argument(
        "--offline",
        action="store_true",
        help="read hf:// sources and hf: tokenizers from the local Hugging Face cache only "
        "(also HF_HUB_OFFLINE=1)",
    )
    p.add_argument("--log-interval", type=_positive_float,
                   help=f"seconds between lines ({RUN['log_interval']:g})")
    p.add_argument("--quiet", action="store_true", help="only errors and the summary")
    return _part_options(p)


def _part_options(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Partitioned runs: one part, or all of them with an executor and then the merge."""
    p.add_argument("--part", help="I/N: build part I of N into DIR.parts/I-of-N (prep merge DIR)")
    p.add_argument("--parts", type=_int, help="run all N parts with --executor, then merge")
    p.add_argument("--executor", choices=EXECUTORS, help="who runs --parts: local (default), ray")
    return p


def _split_args(ns: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recipe settings typed, run options typed): argparse leaves untyped options out."""
    given = vars(ns)
    typed = {k: v for k, v in given.items() if k in RECIPE_FIELDS}
    run = {k: v for k, v in given.items() if k not in RECIPE_FIELDS}
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


class _Aborted(Exception):
    """A second SIGINT during ``prepare``."""


class _Say:
    """Where the error boundary writes: stderr, or a run's console once it exists (which
    ends an open progress bar first)."""

    def __init__(self) -> None:
        self.to: Callable[[str], None] = lambda text: print(text, file=sys.stderr)

    def __call__(self, text: str) -> None:
        self.to(text)


def _boundary(command: Callable[[_Say], int]) -> int:
    """The one place errors become messages and exit codes. ``PrepError``: its message and
    exit code (75 is "stopped", resumable, not a failure); argparse's exit: its code (it
    printed the usage error); a second interrupt: 130. Anything else keeps its traceback."""
    say = _Say()
    try:
        return command(say)
    except SystemExit as e:  # only argparse raises it, after printing
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    except PrepError as e:
        say(f"prep: {'stopped' if e.exit_code == EXIT_TEMPFAIL else 'error'}: {e}")
        return e.exit_code
    except OSError as e:  # reading for verify or inspect; prepare translates its own
        say(f"prep: error: {e}")
        return EXIT_ERROR
    except _Aborted:
        say(
            "prep: aborted by a second interrupt; rerun with --resume to continue from "
            "the last checkpoint"
        )
        return 130


def _prepare(say: _Say, argv: list[str], prog: str) -> int:
    from prep.api import hub_offline_default, prepare_outcome

    typed, run_args = _split_args(prepare_parser(prog).parse_args(argv))
    console = Console(
        sys.stderr, bool(run_args.get("quiet")), run_args.get("log_interval", RUN["log_interval"])
    )
    say.to = console.message
    with console:
        if "parts" in run_args:
            return _prepare_parts(console, argv, typed, run_args)
        if "executor" in run_args:
            raise UsageError("--executor runs the parts of --parts N; give --parts too")
        out = run_args.pop("out")
        run_args["token"] = run_args.get("token") or os.environ.get("HF_TOKEN")
        run_args["offline"] = bool(run_args.get("offline")) or hub_offline_default()
        signals = _Signals()
        try:
            with signals.installed():
                outcome = prepare_outcome(
                    out,
                    typed,
                    run_args,
                    stop=signals,
                    reporter=console.reporter,
                    argv=list(argv),
                )
        except KeyboardInterrupt:
            raise _Aborted from None
        console.summary(summary_line(outcome))
    return EXIT_OK


def _prepare_parts(
    console: Console, argv: list[str], typed: dict[str, Any], run_args: dict[str, Any]
) -> int:
    """``--parts N [--executor E]``: every part by the executor, then the merge."""
    from prep.executors import driver_options_removed, run_partitioned

    count = int(run_args.pop("parts"))
    executor = run_args.pop("executor", "local")
    if count < 1:
        raise UsageError(f"--parts {count} must be >= 1")
    if "part" in typed:
        raise UsageError("--part I/N runs one part and --parts N runs them all; give one")
    validate({**typed, "part": f"0/{count}"})  # refuses what parts cannot do
    RunOptions(**{k: v for k, v in run_args.items() if k != "token"})  # checks the values
    shared = driver_options_removed(argv)
    outcome = run_partitioned(
        run_prepare, shared, Path(run_args["out"]), count, executor,
        threads=run_args.get("threads"), wait_lock=run_args.get("wait_lock", 0.0),
    )
    console.summary(summary_line(outcome))
    return EXIT_OK


def run_prepare(argv: list[str], prog: str = "prepare.py") -> int:
    """``prepare`` with its own argv; returns the exit code."""
    return _boundary(lambda say: _prepare(say, argv, prog))


def _verify(argv: list[str]) -> int:
    from prep.verify import verify_dataset

    p = argparse.ArgumentParser(prog="prep verify", description="Verify a published dataset.")
    p.add_argument("dir", type=Path)
    p.add_argument(
        "--llmc-batch",
        nargs=2,
        type=_int,
        metavar=("B", "T"),
        help="also report shards llm.c's DataLoader rejects for batch B x T (B*T+1 tokens each)",
    )
    ns = p.parse_args(argv)
    if not ns.dir.is_dir():
        raise InputError(f"{ns.dir} is not a directory", path=ns.dir)
    problems = verify_dataset(ns.dir, llmc_batch=ns.llmc_batch)
    for line in problems:
        print(f"FAIL {line}")
    if problems:
        print(f"{ns.dir}: {len(problems)} problem(s)")
        return EXIT_ERROR
    print(f"{ns.dir}: OK")
    return EXIT_OK


def run_verify(argv: list[str]) -> int:
    return _boundary(lambda _say: _verify(argv))


def _inspect(argv: list[str]) -> int:
    from prep.inspector import inspect_path

    p = argparse.ArgumentParser(
        prog="prep inspect", description="Describe a .bin file, dataset or staging dir."
    )
    p.add_argument("path", type=Path)
    p.add_argument("--first", type=int, default=16, help="ids to show (16)")
    p.add_argument("--tokenizer", help="decode the ids with this tokenizer.json (or byte)")
    ns = p.parse_args(argv)
    for line in inspect_path(ns.path, first=ns.first, tokenizer=ns.tokenizer):
        print(line)
    return EXIT_OK


def run_inspect(argv: list[str]) -> int:
    return _boundary(lambda _say: _inspect(argv))


def _merge(say: _Say, argv: list[str]) -> int:
    from prep.merge import merge

    p = argparse.ArgumentParser(
        prog="prep merge", description="Verify the parts in DIR.parts/ and publish DIR."
    )
    p.add_argument("dir", type=Path, help="the dataset the parts were built for (--out DIR)")
    p.add_argument("--wait-lock", type=float, default=0.0, help="seconds to wait for the lock")
    p.add_argument("--threads", type=_int, help="parts verified at once (all cores)")
    p.add_argument("--quiet", action="store_true", help="only errors and the summary")
    ns = p.parse_args(argv)
    console = Console(sys.stderr, ns.quiet, RUN["log_interval"])
    say.to = console.message
    with console:
        outcome = merge(ns.dir, wait_lock=ns.wait_lock, threads=ns.threads, argv=list(argv))
        console.summary(summary_line(outcome))
    return EXIT_OK


def run_merge(argv: list[str]) -> int:
    return _boundary(lambda say: _merge(say, argv))


_COMMANDS = {
    "prepare": run_prepare, "verify": run_verify, "inspect": run_inspect, "merge": run_merge,
}


def main(argv: list[str] | None = None) -> int:
    """``prep COMMAND ...``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in _COMMANDS:
        print(
            "usage: prep {prepare,merge,verify,inspect} ...\n"
            "  prepare  build a dataset (same as scripts/prepare.py)\n"
            "  merge    join the parts of --part I/N runs into one dataset\n"
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
