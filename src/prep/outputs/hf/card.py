"""The dataset card (``README.md``) a Hub publish commits with the manifest: a plain function
of the manifest, the published URI, the shards' sizes and what the source's own card says.

Front matter, as the Hub reads a dataset card's metadata: ``license`` (``--license``, else
the source dataset's card when the source is on the Hub, else ``other``, with a warning),
``language`` (the source card's, when it has one), ``task_categories: [text-generation]``,
``size_categories`` (the Hub's bins, by documents), ``source_datasets`` (the source
repository, when it is on the Hub), ``tags`` (``tokenized``, the format, ``prep``),
``viewer: false`` and no ``configs``: the viewer cannot read token ids, so it is not pointed
at them. The values are written as JSON strings, which YAML reads as the same strings.

Body: the tokenizer (its spec and revision when the run's checkpoint gives them), the format
and dtype with the byte layout of a shard's id file, the splits, the recipe, the pinned
source, and the commands that verify and read the dataset.
``--card-template FILE``: its front matter (if any) is laid over the generated one, and its
body goes after the generated body, or where it writes ``{{generated}}``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml  # type: ignore[import-untyped]

from prep.errors import InputError, UsageError
from prep.hub.paths import parse_dataset_uri
from prep.state.identity import TokenizerIdentity
from prep.state.manifest import Manifest

logger = logging.getLogger(__name__)

PLACEHOLDER = "{{generated}}"
_SIZE_BINS = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
              (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"),
              (1_000_000_000, "100M<n<1B"), (10_000_000_000, "1B<n<10B"),
              (100_000_000_000, "10B<n<100B"), (1_000_000_000_000, "100B<n<1T"))
_SHOWN_FILES = 20


@dataclass(frozen=True)
class CardOptions:
    """What the user gave for the card: ``--license`` and ``--card-template``."""

    license: str | None = None
    template: Path | None = None


@dataclass(frozen=True)
class SourceCard:
    """What the source dataset's own card says (empty: not on the Hub, or no card)."""

    meta: Mapping[str, Any] = field(default_factory=dict)

    def values(self, key: str) -> list[str]:
        v = self.meta.get(key)
        if isinstance(v, str):
            return [v]
        return [str(x) for x in v] if isinstance(v, list) else []


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bin of ``n`` examples."""
    for bound, name in _SIZE_BINS:
        if n < bound:
            return name
    return "n>1T"


def hub_repo_of(uri: str) -> str | None:
    """``OWNER/NAME`` of an ``hf://datasets/OWNER/NAME[@REV][/PATH]`` source, as ``--source``
    parsed it (:func:`prep.hub.paths.parse_dataset_uri`), else None."""
    try:
        return parse_dataset_uri(uri).repo_id
    except UsageError:
        return None


def front_matter(manifest: Manifest, opts: CardOptions, source: SourceCard) -> dict[str, Any]:
    """The card's metadata (see the module docstring), in the order it is written."""
    licenses = [opts.license] if opts.license else source.values("license")
    if not licenses:
        logger.warning("the dataset card says license: other (no --license, and the source "
                       "names none); pass --license SPDX-ID to name the license the shards "
                       "are under")
        licenses = ["other"]
    meta: dict[str, Any] = {"license": licenses[0] if len(licenses) == 1 else licenses}
    if languages := source.values("language"):
        meta["language"] = languages
    meta["task_categories"] = ["text-generation"]
    docs = sum(s.n_docs for s in manifest.totals.values())
    meta["size_categories"] = [size_category(docs)]
    if (repo := hub_repo_of(manifest.source.uri)) is not None:
        meta["source_datasets"] = [repo]
    meta["tags"] = ["tokenized", manifest.format, "prep"]
    meta["viewer"] = False
    return meta


def _yaml(meta: Mapping[str, Any]) -> str:
    lines = ["---"]
    for key, value in meta.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines += [f"- {json.dumps(v)}" for v in value]
        else:
            lines.append(f"{key}: {json.dumps(value)}")
    return "\n".join([*lines, "---", ""])


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _layout(manifest: Manifest, sizes: Mapping[str, int]) -> list[str]:
    """The byte layout of the first shard's id file, from its size and token count."""
    first = manifest.files[0] if manifest.files else None
    if first is None or first.name not in sizes:
        return []
    width = np.dtype(manifest.dtype).itemsize
    header = sizes[first.name] - first.n_tokens * width
    rows: list[tuple[object, ...]] = []
    if header:
        rows.append((f"0 .. {header - 1}", f"header, {header:,} bytes (see the format's "
                     "documentation: magic, version, token count)"))
    rows.append((f"{header} .. end", f"the ids: {manifest.dtype}, little-endian, "
                 f"{width} bytes each, documents one after another"))
    extra = [c.name for c in first.companions]
    lines = ["", f"Layout of an id file ({first.name}: {first.n_tokens:,} tokens, "
             f"{sizes[first.name]:,} bytes):", "", *_table(("bytes", "content"), rows)]
    if extra:
        lines += ["", "Beside it (document index): " + ", ".join(f"`{n}`" for n in extra)]
    return lines


def _tokenizer_rows(tok: TokenizerIdentity | None) -> list[tuple[object, ...]]:
    """Where the tokenizer came from (the run's checkpoint records it; the manifest pins its
    bytes by SHA-256)."""
    if tok is None:
        return []
    return [("from", f"`{tok.spec}`"), ("revision", tok.revision or "-")]


def _body(manifest: Manifest, uri: str, sizes: Mapping[str, int],
          tokenizer: TokenizerIdentity | None) -> list[str]:
    src = manifest.source
    sep = ("none" if manifest.doc_sep_id is None
           else f"{manifest.doc_sep_id} ({manifest.sep_position})")
    lines = [f"# {manifest.dataset}", "",
             f"Token shards of `{src.uri}`, prepared with prep. A revision of this repository "
             "is a dataset exactly when it holds `_MANIFEST.json`, which pins every file "
             "below by SHA-256.", "", "## Tokenizer", "",
             *_table(("", ""), [("name", manifest.tokenizer_id),
                                *_tokenizer_rows(tokenizer),
                                ("tokenizer.json SHA-256", f"`{manifest.tokenizer_sha256}`"),
                                ("vocabulary size V", f"{manifest.vocab_size:,}"),
                                ("separator (position)", sep)]),
             "", "## Format", "",
             *_table(("", ""), [("format", manifest.format), ("dtype", manifest.dtype),
                                ("layout version", manifest.bin_version),
                                ("tokens per file at most", f"{manifest.max_file_tokens:,}")]),
             *_layout(manifest, sizes), "", "## Splits", "",
             *_table(("split", "files", "documents", "tokens"),
                     [(n, f"{s.n_files:,}", f"{s.n_docs:,}", f"{s.n_tokens:,}")
                      for n, s in manifest.totals.items()]),
             "", "## Recipe", "",
             *_table(("setting", "value"),
                     [(k, json.dumps(v)) for k, v in manifest.recipe.items()]),
             "", "## Source", "",
             *_table(("", ""), [("uri", f"`{src.uri}`"), ("revision", src.revision or "-"),
                                ("text column", src.text_column),
                                ("rows visited", f"{src.rows_visited:,}"),
                                ("files", f"{len(src.files):,}")]),
             "", *_table(("file", "bytes", "SHA-256"),
                         [(f"`{f.path}`", f"{f.size:,}", f"`{f.sha256}`")
                          for f in src.files[:_SHOWN_FILES]])]
    if len(src.files) > _SHOWN_FILES:
        lines.append(f"\n... and {len(src.files) - _SHOWN_FILES:,} more (all in `_MANIFEST.json`)")
    lines += ["", "## Verify and read", "", "Pin a commit (`@COMMIT`) to read exactly these "
              "bytes; every file is checked against the manifest:", "", "```sh", "pip install prep",
              f"prep verify {uri}@COMMIT", "```", "", "```python", "import prep",
              f'stream = prep.TokenStream("{uri}@COMMIT", split="train", seq_len=1024)',
              "```", ""]
    return lines


def split_front_matter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """A card's front matter (its YAML header between ``---`` lines, if any) and body;
    ``InputError`` naming ``where`` for a header that is not a YAML mapping."""
    if not text.startswith("---\n"):
        return {}, text
    head, sep, body = text[4:].partition("\n---\n")
    try:
        meta = yaml.safe_load(head) if sep else None
    except yaml.YAMLError as e:
        raise InputError(f"{where}: its front matter is not YAML ({e})", path=where) from e
    if not isinstance(meta, dict):
        raise InputError(f"{where}: its front matter (between the first two --- lines) is "
                         "not a YAML mapping", path=where)
    return meta, body


def read_template(path: Path) -> tuple[dict[str, Any], str]:
    """A ``--card-template``'s front matter and body."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"--card-template {path}: cannot read it ({e}); give a UTF-8 "
                         "Markdown file", path=path) from e
    return split_front_matter(text, f"--card-template {path}")


def dataset_card(manifest: Manifest, uri: str, opts: CardOptions,
                 sizes: Mapping[str, int], source: SourceCard | None = None,
                 tokenizer: TokenizerIdentity | None = None) -> str:
    """The card's text (see the module docstring)."""
    meta = front_matter(manifest, opts, source or SourceCard())
    body = "\n".join(_body(manifest, uri, sizes, tokenizer))
    if opts.template is not None:
        extra_meta, extra = read_template(opts.template)
        meta.update(extra_meta)
        meta.pop("configs", None)  # the viewer is never pointed at the token files
        body = extra.replace(PLACEHOLDER, body) if PLACEHOLDER in extra else (
            f"{body}\n{extra.strip()}\n")
    return _yaml(meta) + "\n" + body
