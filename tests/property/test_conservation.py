"""Conservation and order across rollovers (README's guarantee 2), through the real CLI.

For any corpus and any small --max-file-tokens, the published files must equal what the
spec model in ``strategies.py`` computes from the spec text alone: the documents (texts
non-empty after strip) in stream order, each with its separator, split by the content hash,
packed greedily into whole-document files. Counts in headers and the manifest must agree.
"""

from __future__ import annotations

import hashlib
import json
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import dir_bytes, write_parquet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import FILE_NAMES, Model, corpora, spec_model

CLI_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SEP_MODES = {
    "prepend-0": (["--doc-sep-id", "0"], 0, False),
    "append-0": (["--doc-sep-id", "0", "--sep-position", "append"], 0, True),
    "none": ([], None, False),
}


def write_corpus(root: Path, corpus: list[list[str]]) -> Path:
    for name, texts in zip(FILE_NAMES, corpus, strict=False):
        write_parquet(root / name, texts)
    return root


def read_bin_independently(path: Path) -> tuple[tuple[int, int, int, int], list[int]]:
    """Header ints [0..3] and ids, with struct, checking the layout rules on the way."""
    raw = path.read_bytes()
    ints = struct.unpack("<256i", raw[:1024])
    magic, version, n, vocab = ints[:4]
    assert magic == 20240520
    assert ints[4:] == (0,) * 252
    width = 2 if version == 1 else 4
    assert len(raw) == 1024 + n * width, f"{path.name}: size disagrees with n"
    ids = list(struct.unpack(f"<{n}{'H' if width == 2 else 'I'}", raw[1024:]))
    return (magic, version, n, vocab), ids


def check_against_model(out: Path, model: Model, limit: int, sep: int | None) -> None:
    manifest = json.loads((out / "_MANIFEST.json").read_bytes())
    entries = {f["name"]: f for f in manifest["files"]}
    names_on_disk = sorted(p.name for p in out.glob("*.bin"))
    assert names_on_disk == sorted(entries)
    seen_keys: dict[int, str] = {}
    for split, sm in model.splits.items():
        paths = sorted(out.glob(f"{split}-*.bin"))
        # Files are numbered from 00000 without gaps; the first one always exists.
        assert [p.name for p in paths] == [f"{split}-{i:05d}.bin" for i in range(len(paths))]
        got = []
        for p in paths:
            header, ids = read_bin_independently(p)
            assert header[1] == 1 and header[3] == 256
            got.append(ids)
            e = entries[p.name]
            assert e["split"] == split
            assert e["n_tokens"] == header[2] == len(ids)
            assert e["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
        # Conservation: the split's files concatenated are its documents in stream order,
        # each with its separator.
        flat = [i for ids in got for i in ids]
        assert flat == [i for _, doc in sm.docs for i in doc]
        # Whole documents per file, greedy rollover: exactly the model's partition.
        assert got == sm.files
        assert [entries[p.name]["n_docs"] for p in paths] == [len(d) for d in sm.file_docs]
        # No empty file precedes a non-empty one.
        if len(got) > 1:
            assert all(got), "an empty file among several"
        # A file past the limit holds one document alone.
        for ids, keys in zip(got, sm.file_docs, strict=True):
            assert len(ids) <= limit or len(keys) == 1
        # Separators: one per document.
        if sep is not None:
            for ids, keys in zip(got, sm.file_docs, strict=True):
                assert ids.count(sep) >= len(keys)
        totals = manifest["totals"][split]
        assert totals == {
            "n_tokens": sum(len(d) for _, d in sm.docs),
            "n_docs": len(sm.docs),
            "n_files": len(paths),
        }
        for keys in sm.file_docs:
            for k in keys:
                assert k not in seen_keys, f"row {k} in both {seen_keys.get(k)} and {split}"
                seen_keys[k] = split
    src = manifest["source"]
    assert src["rows_visited"] == model.rows_visited
    assert src["empty_rows_skipped"] == model.empty
    assert src["prefix_sha256"] == model.prefix_sha256
    val = model.splits["val"]
    assert manifest["val_bytes_per_token"] == (1.0 if val.text_bytes else None)


def run_and_check(cli: Any, corpus: list[list[str]], limit: int, mode: str, **shuffle: Any
                  ) -> None:
    flags, sep, append = SEP_MODES[mode]
    extra: list[object] = []
    if shuffle.get("shuffle_files"):
        extra.append("--shuffle-files")
    if shuffle.get("shuffle_buffer"):
        extra += ["--shuffle-buffer", shuffle["shuffle_buffer"]]
    model = spec_model(corpus, sep=sep, append=append, limit=limit, **shuffle)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = write_corpus(root / "src", corpus)
        out = root / "out"
        r = cli("prepare", "--tokenizer", "byte",
                "--out", out, "--source", src, "--max-file-tokens", limit,
                "--val-fraction", 0.3, "--quiet", *flags, *extra)
        if not model.splits["train"].docs:
            assert r.code == 1, r.err
            assert "the train split is empty" in r.err
            assert f"after {model.rows_visited:,} rows ({model.empty:,} empty)" in r.err
            assert not out.exists()
            assert not (root / "out.incomplete").exists()
            return
        assert r.code == 0, r.err
        check_against_model(out, model, limit, sep)


@pytest.mark.parametrize("mode", sorted(SEP_MODES))
@CLI_SETTINGS
@given(corpus=corpora(), limit=st.integers(1, 50))
def test_conservation(cli: Any, mode: str, corpus: list[list[str]], limit: int) -> None:
    run_and_check(cli, corpus, limit, mode)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    corpus=corpora(max_files=4, max_rows=10),
    limit=st.integers(1, 50),
    shuffle_files=st.booleans(),
    shuffle_buffer=st.integers(0, 6),
    mode=st.sampled_from(sorted(SEP_MODES)),
)
def test_conservation_with_shuffles(
    cli: Any,
    corpus: list[list[str]],
    limit: int,
    shuffle_files: bool,
    shuffle_buffer: int,
    mode: str,
) -> None:
    run_and_check(cli, corpus, limit, mode, shuffle_files=shuffle_files,
                  shuffle_buffer=shuffle_buffer)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    n_docs=st.integers(1, 40),
    limit=st.integers(1, 50),
    data=st.data(),
)
def test_splits_are_disjoint_by_document_index(
    cli: Any, n_docs: int, limit: int, data: st.DataObject
) -> None:
    """Self-describing documents ``<i>tail``: every index lands in exactly one split, in
    increasing order within it, and in the split the hash rule gives."""
    from strategies import spec_is_val

    tails = data.draw(
        st.lists(
            st.text(
                alphabet=st.characters(exclude_characters="\x00<>", exclude_categories=("Cs",)),
                max_size=8,
            ),
            min_size=n_docs,
            max_size=n_docs,
        )
    )
    texts = [f"<{i}>{t}" for i, t in enumerate(tails)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = write_parquet(root / "s.parquet", texts)
        out = root / "out"
        r = cli("prepare", "--tokenizer", "byte",
                "--out", out, "--source", src, "--max-file-tokens", limit,
                "--val-fraction", 0.3, "--doc-sep-id", 0, "--sep-position", "append",
                "--quiet")
        want_val = {i for i, t in enumerate(texts) if spec_is_val(t, 1337, 0.3)}
        if len(want_val) == n_docs:
            assert r.code == 1 and "train split is empty" in r.err
            return
        assert r.code == 0, r.err
        found: dict[str, list[int]] = {}
        for split in ("train", "val"):
            found[split] = []
            for p in sorted(out.glob(f"{split}-*.bin")):
                raw = p.read_bytes()
                n = struct.unpack("<i", raw[8:12])[0]
                data_bytes = bytes(struct.unpack(f"<{n}H", raw[1024:]))
                assert data_bytes == b"" or data_bytes.endswith(b"\x00"), "file ends mid-doc"
                for piece in data_bytes.split(b"\x00")[:-1]:
                    text = piece.decode("utf-8")
                    found[split].append(int(text[1 : text.index(">")]))
        assert set(found["train"]).isdisjoint(found["val"])
        assert sorted(found["train"] + found["val"]) == list(range(n_docs))
        assert found["val"] == sorted(want_val)
        assert found["train"] == sorted(set(range(n_docs)) - want_val)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(corpus=corpora(max_files=3, max_rows=12), limit=st.integers(1, 40),
       mode=st.sampled_from(sorted(SEP_MODES)))
def test_any_batch_size_gives_identical_bytes(
    cli: Any, corpus: list[list[str]], limit: int, mode: str
) -> None:
    flags = SEP_MODES[mode][0]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = write_corpus(root / "src", corpus)
        for batch in (1, 7, 1000):
            out = root / f"out{batch}"
            r = cli("prepare", "--tokenizer", "byte",
                    "--out", out, "--source", src, "--max-file-tokens", limit,
                    "--val-fraction", 0.3, "--batch-size", batch, "--dataset", "same",
                    "--quiet", *flags)
            results.append((r.code, dir_bytes(out) if out.exists() else {}))
    codes = {c for c, _ in results}
    assert len(codes) == 1
    assert results[0][1] == results[1][1] == results[2][1]
    if results[0][0] == 0:
        assert "_MANIFEST.json" in results[0][1]
