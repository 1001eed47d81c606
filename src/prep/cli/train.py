"""``prep train-tokenizer``'s grammar: its options, with the defaults taken from
:class:`~prep.tokenizer.settings.TrainRecipe` and prepare's :class:`~prep.recipe.RunOptions`,
and the split of a parsed namespace into recipe settings and run options."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from prep.cli import options
from prep.cli.options import EXIT_CODES, Parser, add_shared, defaults
from prep.cli.values import count, fraction, shown
from prep.recipe import RunOptions
from prep.tokenizer.model import DEFAULT_MIN_FREQUENCY, DEFAULT_VOCABULARY, METHODS
from prep.tokenizer.pretokenize import NAMES
from prep.tokenizer.settings import RECIPE_FIELDS, TrainRecipe

EXAMPLES = """\
examples:
  a 32,000-id BPE tokenizer from local Parquet files (val documents held out):
    {prog} --source data/fineweb/ --vocab-size 32000 --special-token '<|endoftext|>' \\
        --out tokenizers/fineweb-32k
  the same with GPT-2's pre-tokenization (merges never cross words, numbers, punctuation):
    {prog} --source data/fineweb/ --vocab-size 32000 --pre-tokenizer gpt2 \\
        --special-token '<|endoftext|>' --out tokenizers/fineweb-32k-gpt2
  then tokenize with it (its first special token is the separator):
    prep prepare --source data/fineweb/ --tokenizer tokenizers/fineweb-32k --out tokens/fw
  continue after an interruption (same command, with --resume):
    {prog} --source data/fineweb/ --vocab-size 32000 --special-token '<|endoftext|>' \\
        --out tokenizers/fineweb-32k --resume"""



# The one source of the help's defaults: the recipe's fields and prepare's run options.
D = defaults(TrainRecipe)
R = defaults(RunOptions)



def parser(prog: str = "prep train-tokenizer") -> Parser:
    """The ``train-tokenizer`` grammar; options not typed are left out of the namespace."""
    p = Parser(
        prog=prog,
        usage=f"{prog} --source SRC --out DIR [options]",
        description="Train a byte or BPE tokenizer on the train split of a Parquet corpus, "
        "exactly\n(docs/tokenizer.md), resumably and reproducibly.",
        epilog=EXAMPLES.format(prog=prog) + "\n\n" + EXIT_CODES,
        argument_default=argparse.SUPPRESS,
    )
    p.add_argument("--source", metavar="SRC", help="what prep prepare --source accepts")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="the tokenizer directory to create")
    p.add_argument("--method", choices=METHODS, help="bpe (default) or byte")
    p.add_argument("--vocab-size", type=count(1), metavar="N",
                   help=f"BPE: at most N ids in all: the 256 bytes, the merges and the "
                   f"special tokens (default: {DEFAULT_VOCABULARY})")
    p.add_argument("--pre-tokenizer", choices=NAMES, metavar="NAME",
                   help="BPE: split each document by GPT-2's (gpt2), cl100k's (gpt4) or "
                   "o200k's regex before counting pairs; none: each document is one "
                   f"sequence (default: {D['pre_tokenizer']})")
    p.add_argument("--min-pair-frequency", type=count(1), metavar="N",
                   help=f"BPE: merge only pairs seen at least N times (default: "
                   f"{DEFAULT_MIN_FREQUENCY})")
    p.add_argument("--special-token", action="append", dest="special_tokens", metavar="TEXT",
                   help="append a special token after the learned ids (repeatable); the "
                   "first is the separator prepare uses")
    p.add_argument("--text-column", metavar="NAME",
                   help=f"the text column (default: {D['text_column']})")
    p.add_argument("--split-column", metavar="NAME",
                   help="take each row's split (train or val) from this column")
    p.add_argument("--val-fraction", type=fraction, metavar="F",
                   help=f"fraction held out as val, as prepare splits (default: "
                   f"{D['val_fraction']})")
    p.add_argument("--seed", type=count(0),
                   help=f"seed of the split hash (default: {D['seed']})")
    p.add_argument("--max-documents", type=count(1), metavar="N",
                   help="stop after N source rows (default: all)")
    p.add_argument("--train-bytes", type=count(1), metavar="N",
                   help="stop after the train document that reaches N bytes of text "
                   "(default: all); bounds memory")
    add_shared(p, {k: shown(v) for k, v in R.items()}, "--workers", "--batch-size",
               "--checkpoint-interval", "--resume", "--wait-lock", "--log-interval", "--quiet",
               "--offline", "--token", helps=HELPS)
    return p


# train-tokenizer's own help for the run options it shares with prepare (cli.options.SHARED)
HELPS = {
    "--workers": "worker processes reading the corpus (default: one per core)",
    "--batch-size": "documents per batch while reading (default: {batch_size})",
    "--checkpoint-interval": "seconds between checkpoints, in each phase (default: "
    "{checkpoint_interval})",
    "--wait-lock": "wait up to S seconds for another run's DIR.lock (default: {wait_lock})",
    "--log-interval": "seconds between progress lines (default: {log_interval})",
    "--quiet": "only errors and the summary line",
    "--offline": "hf:// sources from the local Hugging Face cache only",
    "--token": "Hugging Face access token (default: HF_TOKEN); never recorded",
}


def split_namespace(ns: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recipe settings typed, run options typed), ``--special-token``s as a tuple."""
    if hasattr(ns, "special_tokens"):
        ns.special_tokens = tuple(ns.special_tokens)
    return options.split_namespace(ns, RECIPE_FIELDS)
