"""The command line: argparse, logging, signals, exit codes. The only place that prints.

``prep prepare ...`` (same as ``python scripts/prepare.py ...``), ``prep merge DIR``,
``prep verify DIR``, ``prep inspect PATH``. Exit codes: 0 published / complete, 1 error,
2 usage, 75 stopped early but resumable (signal after a checkpoint, or the lock is held).
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
from typing import Any, TypeVar

from prep._version import __version__
from prep.cli import options
from prep.cli.console import Console, summary_line
from prep.encoders.engine import CHOICES as ENGINES
from prep.errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_TEMPFAIL,
    EXIT_USAGE,
    InputError,
    PrepError,
    UsageError,
    os_failure,
)
from prep.executors import EXECUTORS
from prep.formats import DTYPES, FORMAT_NAMES
from prep.recipe import RECIPE_FIELDS, Recipe, RunOptions, validate
from prep.redact import RedactingFilter, environment_secrets, redact_text
from prep.startup import hand_back, take_over

logger = logging.getLogger("prep")
T = TypeVar("T")


RECIPE = options.defaults(Recipe)
RUN = options.defaults(RunOptions)


def prepare_parser(prog: str = "prepare.py") -> argparse.ArgumentParser:
    """The ``prepare`` grammar (prep.cli.options) with the recipe's and run options' defaults."""
    choices = {"format": FORMAT_NAMES, "dtype": DTYPES, "executor": EXECUTORS,
               "engine": ENGINES}
    return options.prepare_parser(prog, {**RECIPE, **RUN}, __version__, choices)


class _Signals:
    """The process's stop request. First SIGTERM/SIGINT: the command stops at its next safe
    point (a checkpoint, the lock, before publishing) with exit 75. Second SIGINT: abort.

    One per process (``STOP``), so that the parts of ``--parts N`` and the merge after them
    share it: a request between two parts stops the next one before it takes its lock."""

    def __init__(self) -> None:
        self.requested: str | None = None  # the first signal's name
        self._depth = 0
        self._old: dict[int, Any] = {}

    def __call__(self) -> bool:
        return self.requested is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if self.requested is None:
            self.requested = name
            logger.warning("%s: finishing the current batch, then checkpointing", name)

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGTERM/SIGINT for the block, from before it touches anything (the
        start-up guard, ``prep.startup``, ends the process at once until then); a second
        SIGINT becomes ``_Aborted``. Blocks nest: the outermost installs and restores."""
        if self._depth == 0:
            self.requested = None
            self._old = take_over(self._handle)
        self._depth += 1
        try:
            yield
        except KeyboardInterrupt:
            raise _Aborted from None
        finally:
            self._depth -= 1
            if self._depth == 0:
                hand_back(self._old)


class _Aborted(Exception):
    """A second SIGINT during a command that writes."""


STOP = _Signals()


class _Say:
    """Where the error boundary writes: stderr, or a run's console once it exists (which
    ends an open progress bar first)."""

    def __init__(self) -> None:
        self.to: Callable[[str], None] = lambda text: print(text, file=sys.stderr)
        # masked in every message (prep.redact): the cloud credentials from the start
        self.secrets: list[str | None] = list(environment_secrets(os.environ))

    def __call__(self, text: str) -> None:
        self.to(redact_text(text, self.secrets))


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
    except OSError as e:  # verify or inspect: the same translation a prepare run uses
        say(f"prep: error: {os_failure(e)}")
        return EXIT_ERROR
    except _Aborted:
        say(
            "prep: aborted by a second interrupt; rerun with --resume to continue from "
            "the last checkpoint"
        )
        return 130


@contextmanager
def _console(say: _Say, run_args: dict[str, Any]) -> Iterator[Console]:
    """The run's console, which the error boundary then writes through, with the token
    the run uses (:func:`prep.api.hub_token`) masked in everything it prints."""
    from prep.api import hub_token

    console = Console(
        sys.stderr, bool(run_args.get("quiet")), run_args.get("log_interval", RUN["log_interval"])
    )
    say.to = console.message
    say.secrets.append(hub_token(run_args.get("token")))
    for handler in logging.getLogger("prep").handlers:  # the console's
        handler.addFilter(RedactingFilter(say.secrets))
    with console:
        yield console


def _signalled(job: Callable[[_Signals], T]) -> T:
    """``job(stop)`` with SIGTERM/SIGINT taken over from the start-up guard before it touches
    anything: a signal asks it to stop at its next safe point (exit 75); a second SIGINT
    aborts. Every command that writes runs through here."""
    with STOP.installed():
        return job(STOP)


def _prepare(say: _Say, argv: list[str], prog: str) -> int:
    from prep.api import prepare_outcome

    typed, run_args = options.split_namespace(prepare_parser(prog).parse_args(argv), RECIPE_FIELDS)
    with _console(say, run_args) as console:
        if "parts" in run_args:
            return _prepare_parts(console, argv, typed, run_args)
        if "executor" in run_args:
            raise UsageError("--executor runs the parts of --parts N; give --parts too")
        out = run_args.pop("out")
        outcome = _signalled(lambda stop: prepare_outcome(
            out, typed, run_args, stop=stop, reporter=console.reporter, argv=list(argv)))
        console.summary(summary_line(outcome))
    return EXIT_OK


def _train_tokenizer(say: _Say, argv: list[str]) -> int:
    from prep.cli.train import parser, split_namespace
    from prep.tokenizer.training import train_tokenizer

    typed, run_args = split_namespace(parser().parse_args(argv))
    with _console(say, run_args) as console:
        out = run_args.pop("out")
        done = _signalled(lambda stop: train_tokenizer(
            out, typed, run_args, stop=stop, reporter=console.reporter))
        console.summary(
            f"{done.status} {done.out}" if done.status != "published" else
            f"published {done.out}: {done.ids:,} ids ({done.merges:,} merges) from "
            f"{done.documents:,} train documents, {done.text_bytes / 1e6:,.1f} MB of text, "
            f"in {done.seconds:,.1f} s"
        )
    return EXIT_OK


def run_train_tokenizer(argv: list[str]) -> int:
    """``train-tokenizer`` with its own argv; returns the exit code."""
    return _boundary(lambda say: _train_tokenizer(say, argv))


def _prepare_parts(
    console: Console, argv: list[str], typed: dict[str, Any], run_args: dict[str, Any]
) -> int:
    """``--parts N [--executor E]``: every part by the executor, then the merge."""
    from prep.api import hub_settings
    from prep.executors import driver_options_removed, run_partitioned

    count = int(run_args.pop("parts"))
    executor = run_args.pop("executor", "local")
    if count < 1:
        raise UsageError(f"--parts {count} must be >= 1")
    if "part" in typed:
        raise UsageError("--part I/N runs one part and --parts N runs them all; give one")
    validate({**typed, "part": f"0/{count}"})  # refuses what parts cannot do
    checked = RunOptions(**{k: v for k, v in run_args.items() if k != "token"})  # the values
    hub = hub_settings(dataclasses.replace(checked, token=run_args.get("token")))
    shared = driver_options_removed(argv)
    outcome = _signalled(lambda stop: run_partitioned(  # the parts ("local": here) share it
        run_prepare, shared, run_args["out"], count, executor,
        threads=run_args.get("threads"), wait_lock=run_args.get("wait_lock", 0.0), stop=stop,
        staging=run_args.get("staging"), hub=hub,
    ))
    console.summary(summary_line(outcome))
    return EXIT_OK


def run_prepare(argv: list[str], prog: str = "prepare.py") -> int:
    """``prepare`` with its own argv; returns the exit code."""
    return _boundary(lambda say: _prepare(say, argv, prog))


def _verify(argv: list[str]) -> int:
    from prep.outputs import published_at
    from prep.readers.verify import verify_output

    ns = options.verify_parser().parse_args(argv)
    if isinstance(ns.dir, Path) and not ns.dir.is_dir():
        raise InputError(f"{ns.dir} is not a directory", path=ns.dir)
    problems = verify_output(published_at(ns.dir), llmc_batch=ns.llmc_batch)
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
    from prep.readers.inspector import inspect_path

    ns = options.inspect_parser().parse_args(argv)
    for line in inspect_path(ns.path, first=ns.first, tokenizer=ns.tokenizer):
        if line.startswith("warning: "):  # a tokenizer that does not match the file
            print(f"prep: {line}", file=sys.stderr)
        else:
            print(line)
    return EXIT_OK


def run_inspect(argv: list[str]) -> int:
    return _boundary(lambda _say: _inspect(argv))


def _merge(say: _Say, argv: list[str]) -> int:
    from prep.merge import merge

    ns = options.merge_parser().parse_args(argv)
    console = Console(sys.stderr, ns.quiet, RUN["log_interval"])
    say.to = console.message
    with console:
        outcome = _signalled(lambda stop: merge(
            ns.dir, wait_lock=ns.wait_lock, threads=ns.threads, argv=list(argv), stop=stop))
        console.summary(summary_line(outcome))
    return EXIT_OK


def run_merge(argv: list[str]) -> int:
    return _boundary(lambda say: _merge(say, argv))


_COMMANDS = {
    "prepare": run_prepare, "verify": run_verify, "inspect": run_inspect, "merge": run_merge,
    "train-tokenizer": run_train_tokenizer,
}


_OVERVIEW = f"""usage: prep {{prepare,merge,verify,inspect,train-tokenizer}} ... | prep --version

  prepare  build a dataset (same as scripts/prepare.py); see prep prepare --help
  merge    join the parts of --part I/N runs into one dataset; see prep merge --help
  verify   re-check a published dataset (exit 0 or 1)
  inspect  describe a .bin file, a dataset or a staging directory
  train-tokenizer  train a byte or BPE tokenizer on a corpus's train split; see its --help

{options.EXIT_CODES}"""


def main(argv: list[str] | None = None) -> int:
    """``prep COMMAND ...``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(_OVERVIEW)  # asked for: stdout, exit 0
        return EXIT_OK
    if args and args[0] == "--version":
        print(f"prep {__version__}")
        return EXIT_OK
    if not args:
        print(_OVERVIEW, file=sys.stderr)
        return EXIT_USAGE
    if args[0] not in _COMMANDS:
        print(options.command_error("prep", args[0], list(_COMMANDS)), file=sys.stderr)
        return EXIT_USAGE
    if args[0] == "prepare":
        return run_prepare(args[1:], prog="prep prepare")
    return _COMMANDS[args[0]](args[1:])


def main_entry() -> None:
    """The console-script entry of installs made before ``prep.__main__:main`` (which
    guards signals first); reinstall to get that one."""
    sys.exit(main())
