"""The command line's grammar: the ``prepare`` options in six groups, each with help and its
default shown in a form the parser accepts, examples and exit codes at the end; a parser
that never accepts an abbreviated option, suggests the closest option to a misspelled one
and reports a usage error in one or two lines.

Exit-code rule (stated in the help): **2** when the command line alone is wrong (prep can
tell without opening a file or the network: an unknown option, a missing one, a value of
the wrong form); **1** when a value is well formed but what it names does not work (a
missing file, a file that is not Parquet or not a tokenizer, bad data).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from prep.cli.values import closest_option, count, fraction, seconds, shown
from prep.outputs import location
from prep.recipe import PACKS, SEP_POSITIONS

GROUPS = ("source", "tokenizer and separator", "splits and order", "output", "run control",
          "Hub")

EXIT_CODES = """\
exit codes:
  0    published, already complete, or up to date (--refresh)
  1    a well-formed value that does not work: a missing file, a file that is not Parquet
       or not a tokenizer, bad data, a failed check, an --out in the way, a full disk
  2    the command line itself is wrong (seen without opening any file): an unknown or
       misspelled option, a missing option, a value of the wrong form
  75   stopped early, resumable: SIGTERM/SIGINT, another run holds DIR.lock, the Hub
       stayed unreachable; run the same command again (with --resume)
  130  aborted by a second Ctrl-C; rerun with --resume"""

EXAMPLES = """\
examples:
  local Parquet files and a tokenizer directory (tokenizer.json, generation_config.json):
    {prog} --source data/fineweb/ --tokenizer models/gpt2/ --out tokens/fineweb-gpt2
  a Hub dataset and a Hub tokenizer (the token comes from HF_TOKEN or the cached login):
    {prog} --source 'hf://datasets/OWNER/NAME@main/data/*.parquet' \\
        --tokenizer hf:openai-community/gpt2 --out tokens/name-gpt2
  continue an interrupted run (its recipe comes from its checkpoint):
    {prog} --out tokens/fineweb-gpt2 --resume
  from cron: exit 0 at once if nothing changed, else rebuild and swap the new version in:
    {prog} --source data/fineweb/ --tokenizer models/gpt2/ --out tokens/fineweb-gpt2 \\
        --refresh --quiet"""


def defaults(cls: type[Any]) -> dict[str, Any]:
    """A dataclass's field defaults: the one source of the CLI's defaults."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def split_namespace(
    ns: argparse.Namespace, recipe_fields: Collection[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recipe settings typed, run options typed) of a parsed command line: argparse
    leaves the options not typed out (``argument_default=SUPPRESS``)."""
    given = vars(ns)
    return ({k: v for k, v in given.items() if k in recipe_fields},
            {k: v for k, v in given.items() if k not in recipe_fields})


# The run options ``prepare`` and ``train-tokenizer`` share: argparse's keywords for each,
# and the help ``prepare`` shows (``{name}``: the default of the setting ``name``, shown).
SHARED: dict[str, tuple[dict[str, Any], str]] = {
    "--resume": ({"action": "store_true"},
                 "continue DIR.incomplete/ (or start, or find DIR complete)"),
    "--wait-lock": ({"type": seconds(True), "metavar": "S"},
                    "wait up to S seconds for another run's DIR.lock (default: {wait_lock}: "
                    "exit 75 at once)"),
    "--batch-size": ({"type": count(1), "metavar": "N"},
                     "documents per batch (default: {batch_size})"),
    "--workers": ({"type": count(1, plain=True), "metavar": "N"},
                  "worker processes reading and tokenizing (default: one per core this "
                  "process may use: its CPU affinity, capped by its cgroup's CPU quota; "
                  "none for a source of at most 256 KiB, tokenized in this process)"),
    "--checkpoint-interval": ({"type": seconds(False), "metavar": "S"},
                              "seconds between checkpoints (default: {checkpoint_interval})"),
    "--log-interval": ({"type": seconds(False), "metavar": "S"},
                       "seconds between progress lines when not on a terminal (default: "
                       "{log_interval})"),
    "--quiet": ({"action": "store_true"}, "only errors and the summary line (dated)"),
    "--offline": ({"action": "store_true"},
                  "read hf:// sources and hf: tokenizers from the local Hugging Face cache "
                  "only (also HF_HUB_OFFLINE=1)"),
    "--token": ({"metavar": "TOKEN"},
                "Hugging Face access token (default: HF_TOKEN, else the cached login); "
                "prefer the HF_TOKEN environment variable (other users see --token in ps). "
                "Never recorded: prep masks it in its files, logs and messages"),
}


def add_shared(g: argparse._ActionsContainer, d: Mapping[str, object], *flags: str,
               helps: Mapping[str, str] | None = None) -> None:
    """Add the ``SHARED`` options ``flags`` to ``g``, in that order: each with its shared
    definition and the help of ``helps`` (a command whose help says it otherwise), else
    prepare's, its defaults filled in from ``d`` (each setting's default, as shown)."""
    for flag in flags:
        kwargs, text = SHARED[flag]
        g.add_argument(flag, help=(helps or {}).get(flag, text).format_map(d), **kwargs)


class Parser(argparse.ArgumentParser):
    """argparse with no abbreviations, a closest-option hint, and short usage errors:
    ``PROG: error: MESSAGE`` and one line saying where the full help is."""

    def __init__(self, **kwargs: Any) -> None:  # Any: argparse.ArgumentParser's keywords
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(**kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(self.unrecognized(extras))
        return ns

    def unrecognized(self, extras: Sequence[str]) -> str:
        """What is wrong with the first argument the parser did not take."""
        first = extras[0]
        if not first.startswith("-") or first == "-":
            return f"unexpected argument {first!r}"
        hint = closest_option(first, list(self._option_string_actions))
        suggestion = f"; did you mean {hint}?" if hint else ""
        return f"unknown option {first.split('=', 1)[0]}{suggestion}"

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n(see {self.prog} --help)\n")


def prepare_parser(prog: str, defaults: Mapping[str, Any], version: str,
                   choices: Mapping[str, Sequence[str]]) -> Parser:
    """The ``prepare`` parser. ``defaults`` maps each setting's dest to its default (the
    recipe's and the run options'), ``choices`` the ``format`` and ``dtype`` names the
    formats offer, the ``executor`` and the ``engine`` names; options not typed are left out of the
    namespace."""
    d: dict[str, Any] = {k: shown(v) for k, v in defaults.items()}
    d["choices"] = choices
    p = Parser(
        prog=prog,
        usage=f"{prog} --source SRC --tokenizer TOK --out DIR [options]",
        description="Turn Parquet text into llm.c .bin token files, resumably and "
        "reproducibly.\nOptions are spelled out in full (no abbreviations).",
        epilog=EXAMPLES.format(prog=prog) + "\n\n" + EXIT_CODES,
        argument_default=argparse.SUPPRESS,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {version}")
    adders = (_source, _tokenizer, _splits, _output, _run_control, _hub)
    for title, add in zip(GROUPS, adders, strict=True):
        add(p.add_argument_group(title), d)
    return p


Group = argparse._ArgumentGroup


def _source(g: Group, d: Mapping[str, Any]) -> None:
    g.add_argument(
        "--source", metavar="SRC",
        help="a local Parquet, Arrow IPC or JSON Lines (.jsonl, .json, .gz, .zst) file, a "
        "directory (searched recursively) or a glob of them, "
        "hf://datasets/OWNER/NAME[@REV][/PATTERN] (the Hugging Face Hub), s3://BUCKET/PREFIX "
        "or gs://BUCKET/PREFIX (a prefix, a glob or one object in a bucket), or `sample` (the "
        "bundled sample corpus); required unless --resume continues a run. What a file is "
        "is told by its content",
    )
    g.add_argument("--text-column", metavar="NAME",
                   help=f"the column holding the text (default: {d['text_column']})")


def _tokenizer(g: Group, d: Mapping[str, Any]) -> None:
    g.add_argument(
        "--tokenizer", metavar="TOK",
        help="a tokenizer.json or the directory holding it, hf:OWNER/NAME[@REV] (a Hub "
        "model), or `byte` (UTF-8 bytes, vocabulary 256); required unless --resume "
        "continues a run. A spec of the wrong form (hf://... is for --source) exits 2; a "
        "well-formed one that names no usable tokenizer (a path typo) exits 1",
    )
    g.add_argument("--tokenizer-id", metavar="NAME",
                   help="the tokenizer's name in the manifest (default: from TOK)")
    sep = g.add_mutually_exclusive_group()
    sep.add_argument(
        "--doc-sep-id", type=count(0), metavar="ID",
        help="the id put between documents (default: eos_token_id of the "
        "generation_config.json beside tokenizer.json, else the eos of "
        "tokenizer_config.json; none for byte)",
    )
    sep.add_argument("--no-doc-sep", action="store_true",
                     help="no separator between documents")
    g.add_argument(
        "--sep-position", choices=SEP_POSITIONS,
        help=f"separator before each document (llm.c's convention) or after it "
        f"(default: {d['sep_position']})",
    )


def _splits(g: Group, d: Mapping[str, Any]) -> None:
    g.add_argument("--split-column", metavar="NAME",
                   help="take each row's split (train or val) from this column")
    g.add_argument(
        "--val-fraction", type=fraction, metavar="F",
        help=f"fraction of documents in val, by a hash of their text (default: "
        f"{d['val_fraction']}; 0: no val)",
    )
    g.add_argument("--seed", type=count(0),
                   help=f"seed of the split hash and the shuffles (default: {d['seed']})")
    g.add_argument("--shuffle-files", action="store_true",
                   help="read the files in a seeded random order (default: by path)")
    g.add_argument(
        "--shuffle-buffer", type=count(0), metavar="N",
        help=f"shuffle documents through a seeded buffer of N (default: {d['shuffle_buffer']})",
    )
    g.add_argument("--max-documents", type=count(1), metavar="N",
                   help="stop after N source rows (default: all)")
    g.add_argument("--train-tokens", type=count(1), metavar="N",
                   help="stop once train holds N tokens (default: all)")


def _output(g: Group, d: Mapping[str, Any]) -> None:
    g.add_argument(
        "--format", choices=d["choices"]["format"],
        help=f"the output container (default: {d['format']}); see docs/format.md",
    )
    g.add_argument(
        "--dtype", choices=d["choices"]["dtype"],
        help=f"the id dtype (default: {d['dtype']}: the narrowest that fits the vocabulary)",
    )
    g.add_argument("--out", required=True, type=location, metavar="DIR",
                   help="the dataset directory to create: new, or an empty directory (an "
                   "empty mount point too), s3://BUCKET/PREFIX/NAME (gs:// too), or "
                   "hf://datasets/OWNER/NAME[@BRANCH][/PATH] (a Hub dataset repository)")
    g.add_argument("--staging", type=Path, metavar="PATH",
                   help="with a bucket or Hub --out: the local directory to stage it in (default: "
                   "under ~/.cache/prep/staging/)")
    g.add_argument("--dataset", metavar="NAME",
                   help="the dataset's name in the manifest (default: DIR's name)")
    g.add_argument(
        "--max-file-tokens", type=count(1), metavar="N",
        help=f"the most ids a file holds (default: {d['max_file_tokens']}); see --pack",
    )
    g.add_argument(
        "--pack", choices=PACKS,
        help=f"how files are cut (default: {d['pack']}): whole starts a new file before a "
        "document that would take one past --max-file-tokens; fixed fills every file of a "
        "split but its last to exactly --max-file-tokens ids, documents running on into the "
        "next file (llm.c's fineweb.py, .npy shards); the stream is the same",
    )


def _run_control(g: Group, d: Mapping[str, Any]) -> None:
    add_shared(g, d, "--resume")
    g.add_argument("--refresh", action="store_true",
                   help="for cron: exit 0 if DIR is current, else rebuild and swap it in")
    g.add_argument("--rehash", action="store_true",
                   help="with --refresh: read and hash every input file, trusting no unchanged "
                   "size, mtime, ctime and inode (or ETag and version) the manifest recorded")
    g.add_argument("--allow-version-change", action="store_true",
                   help="resume although the tokenizers or numpy version changed")
    add_shared(g, d, "--wait-lock", "--batch-size")
    g.add_argument("--threads", type=count(1, plain=True), metavar="N",
                   help="tokenizer threads per worker process (default: 1)")
    add_shared(g, d, "--workers")
    g.add_argument(
        "--recycle-workers", type=count(1), metavar="BYTES",
        help="replace each worker with a fresh one after it has read BYTES of text (e.g. "
        "4G): bounds what the workers' caches and allocators keep, at about 0.5 s of CPU "
        "per replacement (default: never)",
    )
    g.add_argument(
        "--worker-memory", type=count(1), metavar="BYTES",
        help="replace a worker with a fresh one after a task that leaves it holding more "
        "than BYTES of resident memory: bounds each worker whatever the corpus holds (a "
        "corpus of ever-new words grows the tokenizer's cache without end) "
        f"(default: {d['worker_memory']})",
    )
    g.add_argument(
        "--engine", choices=d["choices"]["engine"],
        help="how ids are computed, never which: auto (the fastest engine that reproduces "
        "the tokenizer exactly, else hf), hf (tokenizers, the reference), gigatoken or bpe "
        "(prep's own, for a tokenizer prep trained without --pre-tokenizer) "
        f"(default: {d['engine']})",
    )
    add_shared(g, d, "--checkpoint-interval", "--log-interval", "--quiet")
    g.add_argument(
        "--part", metavar="I/N",
        help="build part I of N (0 <= I < N) into DIR.parts/I-of-N; once every part is "
        "built, prep merge DIR publishes DIR (default: no parts)",
    )
    g.add_argument("--parts", type=count(1, plain=True), metavar="N",
                   help="build all N parts with --executor, then merge them into DIR")
    g.add_argument(
        "--executor", choices=d["choices"]["executor"],
        help="who runs the parts of --parts: local (one after another, here) or ray (Ray "
        "tasks; pip install 'prep[ray]') (default: local)",
    )


def _hub(g: Group, d: Mapping[str, Any]) -> None:
    add_shared(g, d, "--offline", "--token")
    g.add_argument("--create-repo", action="store_true",
                   help="with --out hf://datasets/OWNER/NAME: create the dataset repository "
                   "when it does not exist (default: refuse)")
    g.add_argument("--license", metavar="ID",
                   help="with a Hub --out: the dataset card's license (default: the source "
                   "dataset card's, when the source is on the Hub, else other)")
    g.add_argument("--card-template", type=Path, metavar="FILE",
                   help="with a Hub --out: a Markdown file whose sections (and front matter) "
                   "are added to the generated dataset card; {{generated}} in it places the "
                   "generated body")


def command_error(prog: str, typed: str, commands: Sequence[str]) -> str:
    """The two lines for an unknown subcommand of ``prep``."""
    hint = closest_option(typed, commands)
    suggestion = f"; did you mean {hint}?" if hint else ""
    return (f"{prog}: error: unknown command {typed!r}{suggestion}\n"
            f"(commands: {', '.join(commands)}; see {prog} --help)")


def inspect_parser(prog: str = "prep inspect") -> Parser:
    p = Parser(prog=prog, description="Describe a .bin file, a dataset or a staging directory "
               "(DIR.incomplete: whether its run is alive, and how to resume it).")
    p.add_argument("path", type=location, metavar="PATH",
                   help="a .bin file, a dataset directory or a staging directory (a dataset "
                   "or a file in a bucket: s3://..., gs://...)")
    p.add_argument("--first", type=count(0), default=16, metavar="N",
                   help="how many ids of a .bin file to show (default: 16)")
    p.add_argument("--tokenizer", metavar="TOK",
                   help="decode the ids with this tokenizer.json (or its directory), or "
                   "`byte`; warns when it does not match the file's vocabulary")
    return p


MERGE_EXAMPLES = """\
examples:
  build the three parts (on one machine or many sharing the filesystem), then merge:
    prep prepare --source data/ --tokenizer models/gpt2/ --out tokens/ds --part 0/3
    prep prepare --source data/ --tokenizer models/gpt2/ --out tokens/ds --part 1/3
    prep prepare --source data/ --tokenizer models/gpt2/ --out tokens/ds --part 2/3
    prep merge tokens/ds"""


def merge_parser(prog: str = "prep merge") -> Parser:
    p = Parser(
        prog=prog,
        description="Verify the parts in DIR.parts/ (built by prep prepare --part I/N "
        "--out DIR),\ncheck they belong together, and publish DIR from them atomically.",
        epilog=MERGE_EXAMPLES + "\n\n" + EXIT_CODES,
    )
    p.add_argument("dir", type=location, metavar="DIR",
                   help="the dataset the parts were built for (their --out DIR, a directory or "
                   "a bucket URI)")
    p.add_argument(
        "--wait-lock", type=seconds(True), default=0.0, metavar="S",
        help="wait up to S seconds for another run's DIR.lock (default: 0: exit 75 at once)",
    )
    p.add_argument("--threads", type=count(1), default=None, metavar="N",
                   help="parts verified at once (default: all cores)")
    p.add_argument("--quiet", action="store_true",
                   help="only errors and the summary line (dated)")
    return p


def verify_parser(prog: str = "prep verify") -> Parser:
    p = Parser(prog=prog, description="Re-hash every file of a published dataset and re-check "
               "every count against _MANIFEST.json: exit 0 when all agree, else 1 with a line "
               "per problem.")
    p.add_argument("dir", type=location, metavar="DIR",
                   help="the dataset directory, or its bucket URI (s3://..., gs://...)")
    p.add_argument(
        "--llmc-batch", nargs=2, type=count(1), metavar=("B", "T"), default=None,
        help="also report shards llm.c's DataLoader rejects for batch B x T (B*T+1 tokens "
        "each)",
    )
    return p
