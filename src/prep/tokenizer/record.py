"""``training.json``: the manifest of a training, for audit and reproduction.

Deterministic (no time, no host, no run option): the same source and recipe give the same
bytes whatever ``--workers``, batch size or interruptions. It holds:

- ``recipe``: every setting that decides the output;
- ``source``: the source pinned as ``prepare`` pins it (kind, URI, revision, the files in
  read order with size and SHA-256, rows visited, empty rows skipped, the prefix digest
  of the visited rows), and what trained: train documents and their bytes of text;
- ``vocabulary``: ``size`` (every id, special tokens included: what ``--vocab-size``
  bounds, ``prep.Tokenizer.vocab_size`` and Hugging Face's ``get_vocab_size()``), learned
  ids, special tokens with their ids, the separator;
- ``pre_tokenizer`` (trained with one): its name and split regex;
- ``merges`` (BPE): ``[left, right, count]`` per merge in training order, the count being
  the pair's occurrences when it was merged;
- ``versions``: prep's, and which trainer ran (``c``, the compiled one, or ``python``,
  its pure-Python twin: same merges).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from prep._version import __version__
from prep.state.manifest import Manifest
from prep.tokenizer.pretokenize import NONE, pattern_of
from prep.tokenizer.settings import TrainRecipe

TRAINING_FILE = "training.json"
FORMAT = "prep-tokenizer-training"
VERSION = 1


def training_json(recipe: TrainRecipe, corpus: Manifest, learned: int,
                  merges: Sequence[tuple[int, int, int]], trainer: str) -> bytes:
    train = corpus.totals["train"]
    specials = [{"id": learned + k, "content": text}
                for k, text in enumerate(recipe.special_tokens)]
    body = {
        "format": FORMAT,
        "version": VERSION,
        "method": recipe.method,
        "recipe": recipe.to_json(),
        "source": {**corpus.source.to_json(), "train_documents": train.n_docs,
                   "train_bytes": train.n_tokens},
        "vocabulary": {"size": learned + len(specials), "learned": learned,
                       "special_tokens": specials,
                       "separator_id": learned if specials else None},
        "versions": {"prep": __version__, "trainer": trainer},
    }
    if recipe.pre_tokenizer != NONE:
        body["pre_tokenizer"] = {"name": recipe.pre_tokenizer,
                                 "pattern": pattern_of(recipe.pre_tokenizer)}
    text = json.dumps(body, ensure_ascii=False, indent=2)
    if recipe.method == "bpe":  # one merge a line: 50,000 merges stay readable and diffable
        rows = ",\n".join(f"    [{a}, {b}, {c}]" for a, b, c in merges)
        text = text[: -len("\n}")] + ',\n  "merges": [' + (f"\n{rows}\n  " if rows else "") + "]\n}"
    return (text + "\n").encode("utf-8")
