"""``TokenStream(..., documents=True)``: each window's ``cu_seqlens`` and position ids
against the documents found independently: the separators in the split's stream read by
``tests/format_readers.py`` (prepend: a document starts at its separator; append: right
after one), their number against the manifest's document counts, on datasets whose small
files make many windows cross a file boundary; and the refusals where separators cannot
tell documents apart."""

from __future__ import annotations

import bisect
from pathlib import Path

import numpy as np
import pytest
from conftest import GPT2_DIR, make_corpus, numbered_docs
from format_readers import manifest_of, split_files, split_stream

from prep.cli.commands import main
from prep.errors import IntegrityError
from prep.readers.tokenstream import TokenStream

CASES = {  # name: (format, separator flags, tokenizer)
    "llmc-byte-prepend": ("llmc", ["--doc-sep-id", "0"], "byte"),
    "raw-gpt2-append": ("raw", ["--sep-position", "append"], "gpt2"),
    "megatron-gpt2-prepend": ("megatron", [], "gpt2"),
    "npy-gpt2-prepend": ("npy", [], "gpt2"),  # no index: the separators, as for llmc and raw
    "datatrove-gpt2-append": ("datatrove", ["--sep-position", "append"], "gpt2"),
    "olmo-gpt2-append": ("olmo", ["--sep-position", "append"], "gpt2"),
}


def build(root: Path, fmt: str, flags: list[str], tokenizer: str, docs: list[str]) -> Path:
    src = make_corpus(root / "src", [docs])
    out = root / "out"
    tok = str(GPT2_DIR) if tokenizer == "gpt2" else tokenizer
    assert main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer", tok,
                 "--format", fmt, "--val-fraction", "0.3", "--max-file-tokens", "200",
                 *flags, "--quiet"]) == 0
    return out


def starts_from_separators(stream: list[int], sep: int, append: bool) -> list[int]:
    """Document starts by the separator rule of docs/format.md (independent of prep)."""
    if append:
        return [0] + [i + 1 for i, t in enumerate(stream[:-1]) if t == sep]
    return [i for i, t in enumerate(stream) if t == sep]


@pytest.mark.parametrize("case", sorted(CASES))
def test_windows_carry_their_documents(tmp_path: Path, case: str) -> None:
    fmt, flags, tokenizer = CASES[case]
    out = build(tmp_path, fmt, flags, tokenizer, numbered_docs(80))
    m = manifest_of(out)
    append = m["sep_position"] == "append"
    for split in ("train", "val"):
        assert len(split_files(out, split)) >= 2  # windows cross files
        stream = split_stream(out, split)
        starts = starts_from_separators(stream, m["doc_sep_id"], append)
        assert len(starts) == m["totals"][split]["n_docs"]
        for seq_len in (7, 64):
            ts = TokenStream(out, split, seq_len, documents=True)
            for i in range(len(ts)):
                x, y, cu, positions = ts[i]
                a = i * seq_len
                assert x.tolist() == stream[a : a + seq_len]
                assert y.tolist() == stream[a + 1 : a + seq_len + 1]
                lo, hi = bisect.bisect_right(starts, a), bisect.bisect_left(starts, a + seq_len)
                inside = [s - a for s in starts[lo:hi]]
                assert cu.dtype == np.int32 and cu.tolist() == [0, *inside, seq_len]
                want = [p - max(c for c in [0, *inside] if c <= p) for p in range(seq_len)]
                assert positions.tolist() == want
            order = ts.order(shuffle=True, seed=1)  # batch b is windows order[3b : 3b+3]
            for b, (x, _, cu, positions) in enumerate(ts.batches(3, shuffle=True, seed=1)):
                rows = [ts[int(k)] for k in order[3 * b : 3 * b + 3]]
                assert x.tolist() == [r[0].tolist() for r in rows]
                flat = [0]
                for r, (_, _, rcu, rpos) in enumerate(rows):
                    flat += [c + r * seq_len for c in rcu.tolist()[1:]]
                    assert positions[r].tolist() == rpos.tolist()
                assert cu.tolist() == flat


@pytest.mark.parametrize("fmt", ["llmc", "npy"])
def test_no_separator_is_refused_where_no_index_exists(tmp_path: Path, fmt: str) -> None:
    out = build(tmp_path / "a", fmt, ["--no-doc-sep"], "byte", numbered_docs(20))
    first = split_files(out, "train")[0].name
    with pytest.raises(IntegrityError, match=rf"^{first}: this {fmt} dataset was built with "
                       r"--no-doc-sep.*--format megatron"):
        TokenStream(out, "train", 16, documents=True)
    TokenStream(out, "train", 16)  # windows of ids need no boundaries
    indexed = build(tmp_path / "b", "datatrove", ["--no-doc-sep"], "byte", numbered_docs(20))
    ts = TokenStream(indexed, "train", 16, documents=True)
    cu = np.concatenate([ts[i][2][1:-1] + i * 16 for i in range(len(ts))])
    assert cu.size > 0  # documents found from the index alone


def test_an_ordinary_separator_inside_documents_is_refused(tmp_path: Path) -> None:
    out = build(tmp_path, "raw", ["--doc-sep-id", "32"], "byte", numbered_docs(20))  # space
    with pytest.raises(IntegrityError, match=r"separators \(32\) for .* documents: the "
                       r"separator also occurs inside documents"):
        TokenStream(out, "train", 16, documents=True)


def test_the_worked_example(tmp_path: Path) -> None:
    # docs/format.md: "Hello world", "Hi" -> [50256, 15496, 995, 50256, 17250], T = 4
    src = make_corpus(tmp_path / "src", [["Hello world", "Hi"]])
    out = tmp_path / "out"
    assert main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                 str(GPT2_DIR), "--val-fraction", "0", "--quiet"]) == 0
    ts = TokenStream(out, "train", 4, documents=True)
    x, y, cu, positions = ts[0]
    assert (x.tolist(), y.tolist(), cu.tolist(), positions.tolist()) == (
        [50256, 15496, 995, 50256], [15496, 995, 50256, 17250], [0, 3, 4], [0, 1, 2, 0])
