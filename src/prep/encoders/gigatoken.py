"""A fast exact engine: gigatoken, used only where it reproduces ``tokenizers`` exactly.

The ids are fixed by the ``tokenizer.json``; an engine only computes them faster. So the
gigatoken engine is built only when every part of the file is one it is known to reproduce
(``gate`` below, plus gigatoken's own refusal of split regexes it does not know, plus a
probe set compared with the reference at load time), and otherwise it *declines* with a
reason the caller logs before using the reference.

Special-token text: docs/format.md's stream step 7 makes the text of a special token ordinary text
inside a document (``tokenizers`` with ``encode_special_tokens = True``), but gigatoken
always matches the added tokens it is given. So gigatoken is built from the file *without*
its special tokens: their text then goes through the pre-tokenizer and BPE like any text,
exactly as in ``tokenizers`` (the parity tests check it on every special token's text). An
added token that is not special is still split out by ``tokenizers``, with options
(``lstrip``, ``single_word``...) gigatoken is not known to match: a document holding the
text of one is encoded by the reference instead; the output order is the input order.

Character classes: gigatoken's Unicode tables are not ``tokenizers'``, so a few thousand
code points (recent letters and ideographs) split differently. A document holding one of
them is encoded by the reference too (:mod:`prep.encoders.guard`: the set derived for this
gigatoken version and split pattern); with no derived set the engine declines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from prep.encoders.flatids import FlatIds
from prep.encoders.guard import Guard, guard_for, split_pattern
from prep.state.versions import installed_version

ENGINE = "gigatoken"
REFERENCE = "hf"  # the name of the engine documents are routed to (prep.encoders.engine.HF)

# Tried at load time on both engines; a difference declines the engine. Short, but each
# line is a known pitfall of byte-level BPE pre-tokenizers.
PROBES = (
    "Hello world",
    "don't I'll we've they're it's HE'S",
    "  leading and trailing spaces   ",
    "tabs\tand\r\nCRLF\r\n\r\n\n\n  end",
    "123 4567 89,012.5 ٣٤٥ ½",
    "café naïve e\u0301 \u00e9 Zażółć",
    "日本語のテキスト 中文 한국어",
    "emoji 👨\u200d👩\u200d👧 🇫🇷 👍🏽",
    "nul\x00byte \x7f del \u2028 line sep \ufeff bom \U0010ffff",
    "x" * 300 + " " * 300 + "y",
)


class Declined(Exception):
    """The engine cannot reproduce this tokenizer exactly; ``str(self)`` says why."""


def gate(config: dict[str, Any]) -> None:
    """Raise ``Declined`` unless ``config`` (a parsed tokenizer.json) uses only parts the
    engine reproduces: a plain byte-level BPE, no normalizer, a byte-level pre-tokenizer
    (alone or after one regex split) without a prefix space."""
    model = config.get("model") or {}
    if model.get("type") != "BPE":
        raise Declined(f"model {model.get('type')!r} is not a BPE")
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise Declined(f"BPE option {key}={model[key]!r} is not supported")
    if model.get("byte_fallback"):
        raise Declined("BPE byte_fallback is not supported")
    if config.get("normalizer") is not None:
        kind = config["normalizer"].get("type")
        raise Declined(f"normalizer {kind!r} is not supported (only byte-level BPE without one)")
    pre = config.get("pre_tokenizer") or {}
    parts = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    kinds = [p.get("type") for p in parts]
    if kinds == ["ByteLevel"] and parts[0].get("use_regex", True):
        byte_level = parts[0]
    elif kinds == ["Split", "ByteLevel"] and not parts[1].get("use_regex", True):
        split, byte_level = parts
        if split.get("behavior") != "Isolated" or split.get("invert"):
            raise Declined("a Split pre-tokenizer other than an isolating regex")
    elif kinds == ["ByteLevel"]:
        raise Declined("a ByteLevel pre-tokenizer without its regex (use_regex=false: each "
                       "document is one word, as prep train-tokenizer writes) is not supported")
    else:
        raise Declined(f"pre-tokenizer {'+'.join(map(str, kinds)) or 'none'} is not byte-level")
    if byte_level.get("add_prefix_space"):
        raise Declined("ByteLevel add_prefix_space=true is not supported")


def added_texts(config: dict[str, Any]) -> list[str]:
    """The contents of the added tokens that are not special: text that goes to the
    reference (``tokenizers`` splits them out even with ``encode_special_tokens``)."""
    return [str(t["content"]) for t in config.get("added_tokens") or []
            if t.get("content") and not t.get("special")]


_SPACE = re.compile(r"[ \t\n\r]*")


def _skip(text: str, i: int) -> int:
    """The first offset at or after ``i`` that is not JSON whitespace."""
    m = _SPACE.match(text, i)
    return m.end() if m else i


def parse_members(text: str) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """A JSON object's members and where each value lies in ``text`` (character offsets):
    ``json.loads`` of the same text, plus the spans, in the same single pass. Raises
    ``ValueError`` when ``text`` is not one JSON object."""
    decode, space = json.JSONDecoder().raw_decode, _skip
    members: dict[str, Any] = {}
    spans: dict[str, tuple[int, int]] = {}
    i = space(text, 0)
    if text[i : i + 1] != "{":
        raise ValueError("not a JSON object")
    i = space(text, i + 1)
    while text[i : i + 1] != "}":
        key, i = decode(text, i)
        i = space(text, i)
        if not isinstance(key, str) or text[i : i + 1] != ":":
            raise ValueError(f"expected a member name and ':' at character {i}")
        start = space(text, i + 1)
        members[key], i = decode(text, start)
        spans[key] = (start, i)
        i = space(text, i)
        if text[i : i + 1] == ",":
            i = space(text, i + 1)
            if text[i : i + 1] == "}":
                raise ValueError(f"a trailing comma at character {i}")
        elif text[i : i + 1] != "}":
            raise ValueError(f"expected ',' or '}}' at character {i}")
    if text[space(text, i + 1) :]:
        raise ValueError("extra data after the object")
    return members, spans


def plan(raw: bytes) -> dict[str, Any]:
    """What building the engine needs from the tokenizer.json bytes ``raw`` beyond the
    bytes themselves, found by parsing them once: the non-special added tokens' texts
    (``routed``), the cut that removes the special ones (``cut``: the byte range of
    ``added_tokens``' value and what replaces it, or None) and the split regex (``pattern``,
    which selects the guard). A function of the bytes alone,
    so it is remembered per file (``memo``) and a later run skips the parse (about a tenth
    of a second for GPT-2's 3.5 MB). Raises ``Declined`` as :func:`load_gigatoken` does
    for a file that is not JSON or that ``gate`` refuses."""
    try:
        text = raw.decode("utf-8")
        config, spans = parse_members(text)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise Declined(f"tokenizer.json is not JSON ({e})") from e
    gate(config)
    cut = None
    added = config.get("added_tokens")
    if isinstance(added, list) and any(t.get("special") for t in added):
        start, end = spans["added_tokens"]
        first = len(text[:start].encode("utf-8"))
        cut = [first, first + len(text[start:end].encode("utf-8")),
               json.dumps([t for t in added if not t.get("special")])]
    return {"routed": added_texts(config), "cut": cut, "pattern": split_pattern(config)}


def planned_json(raw: bytes, steps: dict[str, Any]) -> bytes:
    """The tokenizer.json gigatoken is built from: ``raw`` with its :func:`plan`'s cut
    made."""
    if steps["cut"] is None:
        return raw
    start, end, kept = steps["cut"]
    return raw[: int(start)] + str(kept).encode("utf-8") + raw[int(end):]


def compact_json(data: bytes) -> bytes:
    """The same JSON value as ``data``, written without whitespace or escapes: gigatoken
    builds GPT-2's engine from these 1.5 MB about a quarter faster than from the file's
    3.5 MB. Kept per file beside its memo (``engine.ENGINE_JSON``), since writing it takes
    longer than it saves once."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise Declined(f"tokenizer.json is not JSON ({e})") from e
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _backend(data: bytes) -> Any:  # Any: gigatoken's Rust tokenizer, which is untyped
    """gigatoken's tokenizer for the tokenizer.json ``data``; raises ``Declined``."""
    try:
        from gigatoken.gigatoken_rs import load_hf_json
    except ImportError as e:
        raise Declined(f"gigatoken is not installed ({e}); pip install gigatoken") from e
    try:
        return load_hf_json(data)
    except Exception as e:  # the Rust side raises RuntimeError with a multi-line report
        raise Declined(f"gigatoken refused the file: {str(e).splitlines()[0]}") from e


Reference = Callable[[list[str], list[bytes]], FlatIds]


def guard_of(steps: dict[str, Any]) -> Guard:
    """The guard for a :func:`plan`'s split pattern at the installed gigatoken version;
    raises ``Declined`` when none ships (the engine is not known exact there)."""
    found = guard_for(ENGINE, installed_version(ENGINE) or "unknown", steps.get("pattern"))
    if isinstance(found, str):
        raise Declined(found)
    return found


class GigatokenEncoder:
    """Ids from gigatoken, except for documents holding the text of a non-special added
    token (``routed``) or a code point of ``guard``, which ``reference`` encodes; identical
    to ``reference`` alone wherever ``gate`` and the probes accept. ``documents`` counts
    the documents each engine encoded."""

    name = ENGINE

    def __init__(self, backend: Any, routed_texts: Sequence[str],  # Any: as _backend's
                 reference: Reference, parallel: bool = False, guard: Guard | None = None
                 ) -> None:
        self._backend = backend
        self._reference = reference
        self._parallel = parallel
        pattern = b"|".join(re.escape(t.encode("utf-8")) for t in sorted(set(routed_texts)))
        self._routed = re.compile(pattern) if pattern else None
        self._guard = guard if guard is not None else Guard(())
        self.documents = {ENGINE: 0, REFERENCE: 0}

    @property
    def reference(self) -> Reference:
        """The reference this engine falls back to (and is checked against)."""
        return self._reference

    def routed(self, texts: Sequence[str], utf8: Sequence[bytes]) -> list[int]:
        """Indices of documents the reference encodes: holding a non-special added token's
        text, or a guarded code point."""
        guarded = self._guard.hits(texts, utf8)
        if self._routed is None:
            return guarded
        search = self._routed.search
        added = [i for i, data in enumerate(utf8) if search(data) is not None]
        return sorted(set(added).union(guarded)) if guarded else added

    def encode_fast(self, utf8: Sequence[bytes]) -> FlatIds:
        """gigatoken alone: on this thread (workers give the parallelism) unless built with
        ``parallel``, then on gigatoken's thread pool."""
        out = self._backend.encode_batch(list(utf8), parallel=self._parallel)
        if isinstance(out, list):  # awkward kept out (prep.startup): one view per document
            return FlatIds.of(out)
        layout = out.layout
        return FlatIds(
            np.asarray(layout.content.data, dtype=np.uint32),
            np.asarray(layout.offsets.data, dtype=np.int64),
        )

    def encode_flat(self, texts: list[str], utf8: list[bytes]) -> FlatIds:
        slow = self.routed(texts, utf8)
        self.documents[ENGINE] += len(utf8) - len(slow)
        self.documents[REFERENCE] += len(slow)
        if not slow:
            return self.encode_fast(utf8)
        fast_idx = np.setdiff1d(np.arange(len(utf8)), slow)
        fast = self.encode_fast([utf8[i] for i in fast_idx])
        ref = self._reference([texts[i] for i in slow], [utf8[i] for i in slow])
        parts: list[Any] = [None] * len(utf8)
        for source, picked in ((fast, fast_idx), (ref, slow)):
            for i, doc in zip(picked, source.split()):  # noqa: B905 - split() of none is [[]]
                parts[i] = doc
        return FlatIds.of(parts)


def load_gigatoken(raw: bytes, reference: Reference, *, probe: bool = True,
                   parallel: bool = False, known: dict[str, Any] | None = None,
                   built: bytes | None = None) -> GigatokenEncoder:
    """The gigatoken engine for the tokenizer.json bytes ``raw`` (``known``: their
    :func:`plan`, when remembered; ``built``: the JSON to build it from, when kept: that
    plan's :func:`planned_json`, or the same value in another form, :func:`compact_json`).

    Raises ``Declined`` (with the reason) when the file has a part the engine does not
    reproduce, gigatoken is not installed or refuses the file, or (``probe``) a probe text
    encodes differently from ``reference``, or no guard ships for its split pattern."""
    steps = known if known is not None else plan(raw)
    backend = _backend(planned_json(raw, steps) if built is None else built)
    guard = guard_of(steps)  # after gigatoken's own refusal, which says more
    engine = GigatokenEncoder(backend, steps["routed"], reference, parallel, guard)
    if not probe:
        return engine
    probes = [p for p in PROBES if not engine.routed([p], [p.encode("utf-8")])]
    got = engine.encode_fast([p.encode("utf-8") for p in probes])
    want = reference(probes, [p.encode("utf-8") for p in probes])
    if not (np.array_equal(got.ids, want.ids) and np.array_equal(got.offsets, want.offsets)):
        bad = next(
            p for p, a, b in zip(probes, got.split(), want.split(), strict=True)
            if not np.array_equal(a, b)
        )
        raise Declined(f"gigatoken's ids differ from tokenizers' on the probe text {bad[:40]!r}")
    return engine
