"""Evaluate candidate tokenizer engines against Hugging Face ``tokenizers`` (the reference).

For each tokenizer of the parity set (``tests/parity_corpus.py``: GPT-2, a byte-level BPE
trained here, cl100k, an NFKC + lowercase + Metaspace tokenizer) and each installed
engine, it reports:

- **load**: loaded, or the error it refused the file with;
- **exactness**: documents whose ids differ from the reference (``encode_special_tokens =
  True``, ``add_special_tokens=False``: special-token text is ordinary text), on the
  parity texts plus every vocabulary entry as a document, and on the real corpus; counted
  on all documents and on those without any added token's text (which prep routes to the
  reference anyway);
- **speed**: tokenizer only, texts in memory, all cores, ``--reps`` alternating
  repetitions against the reference in the same run: ``speedup = median(hf) /
  median(engine)``.

Engines: ``gigatoken`` (as prep uses it: ``prep.encoders.gigatoken``, added-token text routed to
the reference, one flat buffer out), ``gigatoken-raw`` (its own batch call on every
document), ``tiktoken`` (ranks and split regex converted from the tokenizer.json),
``fastokens``, ``tokie``, ``kitoken``. A missing package is reported, not fatal.

    python benchmarks/engines.py [--mb 10] [--reps 3] [--workdir D]

Prints one JSON line per (tokenizer, engine) on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(BENCH), str(REPO / "tests"), str(REPO / "src")]
from memory import reusable_corpus  # noqa: E402
from parity_corpus import parity_texts, parity_tokenizers  # noqa: E402

from prep.encoders.flatids import FlatIds  # noqa: E402
from prep.encoders.gigatoken import added_texts, load_gigatoken  # noqa: E402
from prep.tokenizer.files import byte_to_unicode  # noqa: E402

Encode = Callable[[list[str]], list[list[int]]]


def log(msg: str) -> None:
    print(f"[engines] {msg}", file=sys.stderr, flush=True)


def flat_lists(ids: Any, lengths: Any) -> list[list[int]]:
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    return [a.tolist() for a in np.split(np.asarray(ids), ends[:-1])]


def hf(path: Path) -> Encode:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.encode_special_tokens = True
    def encode(texts: list[str]) -> list[list[int]]:
        return [e.ids for e in tok.encode_batch_fast(texts, add_special_tokens=False)]

    # Timed: ids to numpy, as prep's hf engine does (no Python list per document).
    encode.native = lambda texts: [np.array(e.ids, dtype=np.uint32) for e in  # type: ignore[attr-defined]
                                   tok.encode_batch_fast(texts, add_special_tokens=False)]
    return encode


def reference_flat(path: Path) -> Callable[[list[str], list[bytes]], FlatIds]:
    enc = hf(path)
    return lambda texts, _: FlatIds.of([np.array(i, dtype=np.uint32) for i in enc(texts)])


def gigatoken(path: Path) -> Encode:
    engine = load_gigatoken(path.read_bytes(), reference_flat(path), parallel=True)

    def encode(texts: list[str]) -> list[list[int]]:
        flat = engine.encode_flat(texts, [t.encode() for t in texts])
        return flat_lists(flat.ids, np.diff(flat.offsets))

    # Timed: UTF-8 bytes in, one flat buffer out, on all cores (how prep calls it).
    encode.native = lambda texts: engine.encode_flat(  # type: ignore[attr-defined]
        texts, [t.encode() for t in texts])
    return encode


def gigatoken_raw(path: Path) -> Encode:
    import gigatoken as gt

    tok = gt.Tokenizer(str(path))

    def encode(texts: list[str]) -> list[list[int]]:
        layout = tok.encode_batch(texts, parallel=True).layout
        return flat_lists(layout.content.data, np.diff(np.asarray(layout.offsets.data)))

    encode.native = lambda texts: tok.encode_batch(texts, parallel=True)  # type: ignore[attr-defined]
    return encode


def tiktoken_converted(path: Path) -> Encode:
    """tiktoken with ranks = ids of the byte-decoded vocabulary and the file's split regex."""
    import tiktoken
    config = json.loads(path.read_text(encoding="utf-8"))
    if config.get("normalizer") is not None:
        raise ValueError("a normalizer cannot be converted to tiktoken")
    pre = config.get("pre_tokenizer") or {}
    parts = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    split = [p for p in parts if p.get("type") == "Split"]
    if split:
        pat = split[0]["pattern"]["Regex"]
    elif [p.get("type") for p in parts] == ["ByteLevel"]:
        from golden_corpus import GPT2_PAT

        pat = GPT2_PAT
    else:
        raise ValueError(f"pre-tokenizer {pre.get('type')} has no tiktoken regex")
    byte_dec = {c: b for b, c in byte_to_unicode().items()}
    ranks = {}
    for token, rank in config["model"]["vocab"].items():
        try:
            ranks[bytes(byte_dec[c] for c in token)] = rank
        except KeyError as e:
            raise ValueError(f"vocab entry {token!r} is not byte-level") from e
    enc = tiktoken.Encoding("converted", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
    return lambda texts: enc.encode_ordinary_batch(texts)


def fastokens(path: Path) -> Encode:
    import fastokens as ft

    tok = ft.Tokenizer.from_file(str(path))

    def encode(texts: list[str]) -> list[list[int]]:
        return [e.ids for e in tok.encode_batch(texts, False, True)]

    encode.native = lambda texts: tok.encode_batch_flat(texts, False, True)  # type: ignore[attr-defined]
    return encode


def tokie(path: Path) -> Encode:
    import tokie as tk

    tok = tk.Tokenizer.from_json(str(path))

    def encode(texts: list[str]) -> list[list[int]]:
        ids, lengths = tok.encode_batch_flat(texts, add_special_tokens=False)
        return flat_lists(ids, lengths)

    encode.native = lambda texts: tok.encode_batch_flat(  # type: ignore[attr-defined]
        texts, add_special_tokens=False)
    return encode


def kitoken(path: Path) -> Encode:
    import kitoken as kt

    tok = kt.Kitoken.from_tokenizers_file(str(path))
    return lambda texts: tok.encode_all(texts, False)


ENGINES: dict[str, Callable[[Path], Encode]] = {
    "gigatoken": gigatoken, "gigatoken-raw": gigatoken_raw, "tiktoken": tiktoken_converted,
    "fastokens": fastokens, "tokie": tokie, "kitoken": kitoken,
}


def vocab_texts(path: Path) -> list[str]:
    from tokenizers import Tokenizer, decoders

    tok = Tokenizer.from_file(str(path))
    dec = decoders.ByteLevel()
    out = [dec.decode([t]) for t in tok.get_vocab(with_added_tokens=False)]
    return [t for t in out if t.strip() and "\ufffd" not in t]


def corpus_texts(corpus: Path) -> list[str]:
    import pyarrow.parquet as pq

    return [t for f in sorted(corpus.glob("*.parquet"))
            for t in pq.read_table(f, columns=["text"]).column(0).to_pylist()]


def mismatches(ref: list[list[int]], got: list[list[int]], texts: list[str], keep: list[bool]
               ) -> dict[str, Any]:
    bad = [i for i, (a, b) in enumerate(zip(ref, got, strict=True)) if list(a) != list(b)]
    clean = [i for i in bad if keep[i]]
    return {"docs": len(texts), "differ": len(bad), "differ_without_added_text": len(clean),
            "first": repr(texts[clean[0] if clean else bad[0]][:60]) if bad else None}


def timed(fn: Encode, texts: list[str]) -> float:
    """Seconds of the engine's own batch call (``fn.native`` when it has one)."""
    native = getattr(fn, "native", fn)
    t = time.perf_counter()
    native(texts)
    return time.perf_counter() - t


def evaluate(name: str, path: Path, corpus: list[str], reps: int) -> None:
    ref = hf(path)
    specials = added_texts(json.loads(path.read_text(encoding="utf-8")))
    sets = {"parity": parity_texts() + vocab_texts(path), "corpus": corpus}
    want = {k: ref(v) for k, v in sets.items()}
    for engine, make in ENGINES.items():
        row: dict[str, Any] = {"tokenizer": name, "engine": engine}
        try:
            enc = make(path)
        except ImportError as e:
            row["load"] = f"not installed: {e}"
            print(json.dumps(row), flush=True)
            continue
        except Exception as e:
            row["load"] = f"refused: {str(e).splitlines()[0][:200]}"
            print(json.dumps(row), flush=True)
            continue
        row["load"] = "ok"
        for k, texts in sets.items():
            keep = [not any(s in t for s in specials) for t in texts]
            try:
                row[k] = mismatches(want[k], enc(texts), texts, keep)
            except Exception as e:
                row[k] = f"raised: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        times: dict[str, list[float]] = {"hf": [], engine: []}
        try:
            for _ in range(reps):
                times["hf"].append(timed(ref, corpus))
                times[engine].append(timed(enc, corpus))
            med = {k: statistics.median(v) for k, v in times.items()}
            mb = sum(len(t.encode()) for t in corpus) / 1e6
            row["speed"] = {"hf_s": round(med["hf"], 3), "engine_s": round(med[engine], 3),
                            "speedup": round(med["hf"] / med[engine], 2),
                            "engine_mb_s": round(mb / med[engine], 1)}
        except Exception as e:
            row["speed"] = f"raised: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        print(json.dumps(row), flush=True)
        log(f"{name} / {engine}: {row.get('speed')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    _, corpus_dir = reusable_corpus(args.workdir, args.mb, "engines-")
    corpus = corpus_texts(corpus_dir)
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in parity_tokenizers(Path(tmp)).items():
            evaluate(name, path, corpus, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
