"""OLMo-core's ``.npy`` + ``.csv.gz``: the independent reader written from OLMo-core's
``iter_document_indices`` reads prep's documents back; with ``--sep-position append`` the
EOS positions OLMo-core would use instead give the same documents; the gzip bytes are the
same on every run."""

from __future__ import annotations

import gzip
from pathlib import Path

from conftest import GPT2_DIR, make_corpus, numbered_docs
from format_readers import manifest_of, read_olmo, split_files

from prep.cli.commands import main
from prep.formats import get_format
from prep.formats.olmo import OlmoIndex, deterministic_gzip


def test_gzip_is_deterministic_and_standard() -> None:
    data = b"0,3\n3,5\n"
    raw = deterministic_gzip(data)
    assert raw == deterministic_gzip(data) and gzip.decompress(raw) == data
    assert raw[3] == 0 and raw[4:8] == b"\0\0\0\0"  # no FNAME flag, mtime 0
    assert OlmoIndex().parse([raw], "uint16", "x")[0] == [3, 2]


def test_prepared_shards_read_back_by_olmo_cores_layout(tmp_path: Path) -> None:
    src = make_corpus(tmp_path / "src", [numbered_docs(60)])
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                     str(GPT2_DIR), "--format", "olmo", "--val-fraction", "0.3",
                     "--sep-position", "append", "--max-file-tokens", "300", "--quiet"]) == 0
        outs.append(out)
    m = manifest_of(outs[0])
    files = {f["name"]: f for f in m["files"]}
    shards = split_files(outs[0], "train") + split_files(outs[0], "val")
    assert len(shards) >= 3
    for path in shards:
        docs = read_olmo(path, m["dtype"])
        assert len(docs) == files[path.name]["n_docs"]
        # OLMo-core's other route (EOS ids in the array, end = eos + 1) cuts the same documents
        flat = [i for d in docs for i in d]
        cuts = [i + 1 for i, t in enumerate(flat) if t == 50256]
        assert cuts == [sum(len(d) for d in docs[: k + 1]) for k in range(len(docs))]
        index = path.with_name(path.name.replace(".npy", ".csv.gz"))
        assert index.read_bytes() == (outs[1] / index.name).read_bytes()
    assert main(["verify", str(outs[0])]) == 0
    # prep inspect on the index describes its shard
    index = shards[0].with_name(shards[0].name.replace(".npy", ".csv.gz"))
    line, ids = get_format("olmo").describe(index, m["dtype"])
    assert ids.tolist() == read_olmo(shards[0], m["dtype"])[0] + [
        i for d in read_olmo(shards[0], m["dtype"])[1:] for i in d]
    n_docs = files[shards[0].name]["n_docs"]
    assert line.startswith(f"{shards[0].name}: olmo uint16 ids")
    assert f"index: {n_docs:,} documents ({index.name})" in line
