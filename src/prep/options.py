"""The ``prepare`` command line's options: groups, help texts and defaults, from one source.

The defaults shown in the help are read from the ``Recipe`` and ``RunOptions`` dataclasses,
so the CLI never repeats them.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from prep.executors import EXECUTORS
from prep.formats import DTYPES, FORMAT_NAMES
from prep.recipe import Recipe, RunOptions


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
    _add_run_options(p)
    return p


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The options that do not change the output (``RunOptions``)."""
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
    p.add_argument(
        "--token",
        help="Hugging Face token (else HF_TOKEN, else cached login); prefer the HF_TOKEN "
        "environment variable (other users see --token in ps). Never recorded: prep masks it "
        "in its files, logs and messages",
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="read hf:// sources and hf: tokenizers from the local Hugging Face cache only "
        "(also HF_HUB_OFFLINE=1)",
    )
    p.add_argument("--log-interval", type=_positive_float,
                   help=f"seconds between lines ({RUN['log_interval']:g})")
    p.add_argument("--quiet", action="store_true", help="only errors and the summary")
    _part_options(p)


def _part_options(p: argparse.ArgumentParser) -> None:
    """Partitioned runs: one part, or all of them with an executor and then the merge."""
    p.add_argument("--part", help="I/N: build part I of N into DIR.parts/I-of-N (prep merge DIR)")
    p.add_argument("--parts", type=_int, help="run all N parts with --executor, then merge")
    p.add_argument("--executor", choices=EXECUTORS, help="who runs --parts: local (default), ray")
