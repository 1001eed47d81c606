"""Resume refuses when anything disagrees with the checkpoint: exit 1, a message that says
what differs and what to do, and the staging directory byte-for-byte as it was.

Each test stops a real run with SIGTERM (exit 75) once it has committed rows and sealed
files, changes one thing, and resumes."""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import harness as h
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from harness import World

factories = h.factories


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> World:
    return h.world(tmp_path_factory, h.SMALL)


def interrupt(
    w: World, out: Path, source: Path | None = None, tokenizer: Path | None = None
) -> dict[str, Any]:
    """Run until at least 2,000 rows are committed and two train files sealed, then SIGTERM;
    returns the checkpoint.

    Then leave what a crash after that checkpoint would: uncommitted ids after the open
    file's committed ones, and the next file, which the checkpoint does not name. A refusal
    must leave those alone too (resume discards them only after verifying everything)."""
    proc = h.spawn(["--out", out, *w.recipe(source, tokenizer), *h.FAST])

    def ready() -> bool:
        cp = h.read_checkpoint(out)
        return (
            cp is not None
            and cp["progress"]["rows_visited"] >= 2000
            and len(cp["splits"]["train"]["sealed"]) >= 2
        )

    assert h.reached(proc, ready), proc.finish()
    proc.send_signal(signal.SIGTERM)
    code, err = proc.finish()
    assert code == 75, err
    cp = h.read_checkpoint(out)
    assert cp is not None
    staging = h.staging_of(out)
    train = cp["splits"]["train"]
    with open(staging / train["open"]["name"], "ab") as f:
        f.write(bytes(40))  # 20 uncommitted ids
    header = (staging / train["sealed"][0]["name"]).read_bytes()[:1024]
    (staging / f"train-{len(train['sealed']) + 1:05d}.bin").write_bytes(header)
    return cp


def refused(out: Path, *extra: str) -> str:
    """Resume, expect a refusal that left staging untouched; returns the message."""
    staging = h.staging_of(out)
    before = h.tree(staging)
    done = h.run(["--out", out, "--resume", *extra])
    assert done.returncode == 1, done.stderr
    h.no_traceback(done.stderr)
    assert "prep: error:" in done.stderr
    assert h.tree(staging) == before, "the refusal changed the staging directory"
    assert not out.exists()
    assert not out.with_name(out.name + ".lock.json").exists(), "the lock was not released"
    return done.stderr


def source_docs(w: World, index: int) -> list[str]:
    """The texts of ``part-<index>.parquet`` as make_corpus wrote them."""
    docs = factories.numbered_docs(w.corpus.n_docs)
    per = -(-w.corpus.n_docs // w.corpus.n_files)
    return docs[index * per : (index + 1) * per]


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


# -- the source -----------------------------------------------------------------------------


def test_a_row_edited_before_the_cursor(w: World, tmp_path: Path) -> None:
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    out = tmp_path / "out"
    interrupt(w, out, source, tok)
    texts = source_docs(w, 0)
    texts[10] += " edited"
    factories.write_parquet(source / "part-00000.parquet", texts)
    err = refused(out)
    assert "source changed" in err and "part-00000.parquet: size" in err
    assert "Restore the original files" in err


def _same_size_edit(w: World, tmp_path: Path, drop_file_hashes: bool) -> str:
    """Interrupt a run over an uncompressed copy of the source, swap two letters in one
    committed row (the file keeps its size), resume; returns the refusal."""
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    path = source / "part-00000.parquet"
    texts = source_docs(w, 0)
    pq.write_table(pa.table({"text": texts}), path, row_group_size=50, compression="none")
    size = path.stat().st_size
    out = tmp_path / "out"
    interrupt(w, out, source, tok)
    if drop_file_hashes:  # as if the files' hashes were never recorded: only the digest
        cp = json.loads((h.staging_of(out) / "checkpoint.json").read_text())
        for f in cp["source"]["files"]:
            f["sha256"] = None
        h.write_checkpoint(out, cp)
    t = texts[10]
    i = next(j for j in range(12, len(t) - 1) if t[j] != t[j + 1] and t[j : j + 2].isalpha())
    texts[10] = t[:i] + t[i + 1] + t[i] + t[i + 2 :]  # e.g. "beta" -> "ebta"
    before = path.stat()
    pq.write_table(pa.table({"text": texts}), path, row_group_size=50, compression="none")
    assert path.stat().st_size == size
    if drop_file_hashes:  # and keep the mtime, so neither hash nor mtime can tell
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    return refused(out)


def test_a_same_size_edit_before_the_cursor_is_caught_by_the_file_hash(
    w: World, tmp_path: Path
) -> None:
    err = _same_size_edit(w, tmp_path, drop_file_hashes=False)
    assert "part-00000.parquet" in err and "changed since the run started" in err
    assert "Restore the original file" in err


def test_a_same_size_edit_before_the_cursor_is_caught_by_the_prefix_digest(
    w: World, tmp_path: Path
) -> None:
    err = _same_size_edit(w, tmp_path, drop_file_hashes=True)
    assert "prefix digest mismatch" in err and "Restore it" in err


def test_a_file_added_before_the_cursor(w: World, tmp_path: Path) -> None:
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    out = tmp_path / "out"
    interrupt(w, out, source, tok)
    factories.write_parquet(source / "a-added.parquet", ["a new first document"])  # sorts first
    err = refused(out)
    assert "a-added.parquet: added" in err and "new --out" in err


def test_a_file_rewritten_with_fewer_rows(w: World, tmp_path: Path) -> None:
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    out = tmp_path / "out"
    interrupt(w, out, source, tok)
    factories.write_parquet(source / "part-00000.parquet", source_docs(w, 0)[:-500])
    err = refused(out)
    assert "part-00000.parquet: size" in err and "Restore the original files" in err


def test_a_read_ahead_file_modified_before_resume_is_refused_before_any_change(
    w: World, tmp_path: Path
) -> None:
    """The reader thread hashes files ahead of the committed rows, and a checkpoint records
    those hashes. A file recorded that way but not reached by the replay must still be
    checked before staging is touched (here the hash is recorded explicitly, as the reader
    would have, so the scenario does not depend on thread timing)."""
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    out = tmp_path / "out"
    cp = interrupt(w, out, source, tok)
    files = cp["source"]["files"]
    ahead = next(f for f in files if f["sha256"] is None)  # not reached by the committed rows
    path = source / ahead["path"]
    ahead["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    h.write_checkpoint(out, cp)
    st = path.stat()
    raw = bytearray(path.read_bytes())
    raw[-20] ^= 0xFF  # same size, same mtime: only the recorded hash can tell
    path.write_bytes(bytes(raw))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    err = refused(out)
    assert ahead["path"] in err and "changed since the run started" in err, err


def test_an_unread_file_modified_before_resume(w: World, tmp_path: Path) -> None:
    """A file the run had not reached has no recorded hash yet; its changed mtime is
    enough to refuse (the content the run would read is no longer the content it listed)."""
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    out = tmp_path / "out"
    interrupt(w, out, source, tok)
    last = source / f"part-{w.corpus.n_files - 1:05d}.parquet"
    cp = json.loads((h.staging_of(out) / "checkpoint.json").read_text())
    assert {f["path"]: f["sha256"] for f in cp["source"]["files"]}[last.name] is None
    st = last.stat()
    os.utime(last, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    err = refused(out)
    assert "not yet read were modified" in err and last.name in err and "new --out" in err


def test_a_file_removed(w: World, tmp_path: Path) -> None:
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    out = tmp_path / "out"
    interrupt(w, out, source, tok)
    (source / f"part-{w.corpus.n_files - 1:05d}.parquet").unlink()
    err = refused(out)
    assert f"part-{w.corpus.n_files - 1:05d}.parquet: removed" in err


def test_a_different_tokenizer_file(w: World, tmp_path: Path) -> None:
    mine = w.copy(tmp_path)
    source, tok = mine.source, mine.tokenizer
    out = tmp_path / "out"
    interrupt(w, out, source, tok)
    factories.bpe_tokenizer(tok, factories.numbered_docs(2000, start=500_000))
    err = refused(out)
    assert f"{tok / 'tokenizer.json'} changed since the run started (SHA-256" in err
    assert "restore it" in err


# -- the staging directory ------------------------------------------------------------------


def test_a_tampered_sealed_file(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cp = interrupt(w, out)
    name = cp["splits"]["train"]["sealed"][0]["name"]
    flip_byte(h.staging_of(out) / name, 1024 + 101)
    err = refused(out)
    assert name in err and "SHA-256" in err and "modified after it was sealed" in err
    assert "Delete" in err


def test_a_tampered_byte_in_the_open_files_committed_ids(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cp = interrupt(w, out)
    opened = cp["splits"]["train"]["open"]
    assert opened["n_tokens"] > 0
    flip_byte(h.staging_of(out) / opened["name"], 1024 + 1)
    err = refused(out)
    assert opened["name"] in err and "do not match" in err and "Delete" in err


def test_a_missing_sealed_file(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cp = interrupt(w, out)
    name = cp["splits"]["train"]["sealed"][1]["name"]
    (h.staging_of(out) / name).unlink()
    err = refused(out)
    assert name in err and "missing" in err and "Delete" in err


def test_an_open_file_cut_below_its_committed_ids(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cp = interrupt(w, out)
    opened = cp["splits"]["train"]["open"]
    path = h.staging_of(out) / opened["name"]
    path.write_bytes(path.read_bytes()[: 1024 + 2 * (opened["n_tokens"] - 1)])
    err = refused(out)
    assert opened["name"] in err and "shorter than" in err


def test_a_corrupt_checkpoint(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    interrupt(w, out)
    path = h.staging_of(out) / "checkpoint.json"
    path.write_bytes(path.read_bytes()[:200])
    err = refused(out)
    assert "checkpoint.json is corrupt" in err and "Delete" in err


def test_an_unknown_checkpoint_format(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    interrupt(w, out)
    path = h.staging_of(out) / "checkpoint.json"
    data = json.loads(path.read_text())
    data["format"] = 99
    path.write_text(json.dumps(data))
    err = refused(out)
    assert "format 99" in err and "another version of prep" in err


# -- the recipe and the installed versions --------------------------------------------------


def test_typed_options_contradicting_the_checkpoint_are_each_listed(
    w: World, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    interrupt(w, out)
    err = refused(out, "--seed", "7", "--max-file-tokens", "1234")
    assert "--seed: typed 7, the run was started with 1337" in err
    assert (
        f"--max-file-tokens: typed 1234, the run was started with {w.corpus.max_file_tokens}" in err
    )
    assert "Drop them" in err


def test_typed_options_agreeing_with_the_checkpoint_are_accepted(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    interrupt(w, out)
    done = h.run(
        [
            "--out",
            out,
            "--resume",
            "--seed",
            "1337",
            "--max-file-tokens",
            str(w.corpus.max_file_tokens),
            "--batch-size",
            "100",
        ]
    )  # a run option, not the recipe: may change
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


@pytest.mark.parametrize("package", ["tokenizers", "numpy"])
def test_a_different_package_version_refuses_unless_allowed(
    w: World, tmp_path: Path, package: str
) -> None:
    out = tmp_path / "out"
    interrupt(w, out)
    path = h.staging_of(out) / "checkpoint.json"
    data = json.loads(path.read_text())
    installed = data["versions"][package]
    data["versions"][package] = "0.0.1"  # as if the run started under another version
    h.write_checkpoint(out, data)
    err = refused(out)
    assert f"{package} 0.0.1 -> {installed}" in err and "--allow-version-change" in err
    done = h.run(["--out", out, "--resume", "--allow-version-change"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


def test_typed_options_contradicting_a_staging_ready_to_publish(w: World, tmp_path: Path) -> None:
    """Killed after the manifest was written, the checkpoint still there: the typed options
    contradict it just as before, so resume must refuse the same way."""
    out = tmp_path / "out"
    kill_after_manifest = {
        "target": "prep.fsio.os.replace",
        "arg_contains": "_MANIFEST.json",
        "action": "kill",
    }
    done = h.run(["--out", out, *w.recipe()], faults=kill_after_manifest)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (h.staging_of(out) / "checkpoint.json").is_file()
    err = refused(out, "--seed", "7")
    assert "--seed: typed 7, the run was started with 1337" in err


def test_typed_options_contradicting_a_staging_whose_checkpoint_is_dropped(
    w: World, tmp_path: Path
) -> None:
    """Killed just before the final rename (checkpoint already dropped, manifest in
    staging): the manifest is the recipe, and contradicting options are refused against it
    exactly like a resume of a complete DIR (issue 8 point 5)."""
    out = tmp_path / "out"
    before_publish = {"target": "prep.outputs.local.LocalDir.publish", "when": "before",
                      "action": "kill"}
    done = h.run(["--out", out, *w.recipe()], faults=before_publish)
    assert done.returncode == -signal.SIGKILL, done.stderr
    staging = h.staging_of(out)
    assert (staging / "_MANIFEST.json").is_file()
    assert not (staging / "checkpoint.json").exists()
    err = refused(out, "--source", "sample", "--tokenizer", "byte", "--val-fraction", "0.5")
    assert f"--source: typed 'sample', the dataset was built with '{w.source.resolve()}'" in err
    assert "--val-fraction: typed 0.5, the dataset was built with 0.01" in err, err
    assert "--tokenizer: typed 'byte'" in err, err
    assert "--refresh" in err, err
    done = h.run(["--out", out, "--resume"])  # the staging was left as it was: it publishes
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


# -- the checkpoint itself (issue 8, point 2) -------------------------------------------------

# The five edits, each as an operator might make them in an editor.
EDITS: dict[str, Any] = {
    "train-n_docs+1": lambda cp: cp["splits"]["train"].update(
        n_docs=cp["splits"]["train"]["n_docs"] + 1
    ),
    "train-n_tokens+1": lambda cp: cp["splits"]["train"].update(
        n_tokens=cp["splits"]["train"]["n_tokens"] + 1
    ),
    "empty_rows_skipped+1": lambda cp: cp["progress"].update(
        empty_rows_skipped=cp["progress"]["empty_rows_skipped"] + 1
    ),
    "val_fraction-0.5": lambda cp: cp["recipe"].update(val_fraction=0.5),
    "max_file_tokens": lambda cp: cp["recipe"].update(max_file_tokens=1000),
}


def _edit_checkpoint(out: Path, edit: Any) -> dict[str, Any]:
    path = h.staging_of(out) / "checkpoint.json"
    cp: dict[str, Any] = json.loads(path.read_text())
    edit(cp)
    return cp


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_checkpoint_is_refused_by_its_digest(w: World, tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    interrupt(w, out)
    cp = _edit_checkpoint(out, EDITS[name])
    (h.staging_of(out) / "checkpoint.json").write_text(json.dumps(cp, indent=1))
    err = refused(out)
    assert "checkpoint.json was modified or corrupted" in err, err
    assert "Do not edit the checkpoint" in err and "to start over" in err, err


# The same edits by someone who also recomputes the digest: what resume recomputes from the
# files and the replayed source rows must catch each one. A consistent forgery keeps the
# totals in step with the file records (else the totals alone give it away).
FORGERIES: dict[str, tuple[Any, str]] = {
    "train-n_docs+1": (
        lambda cp: (
            cp["splits"]["train"].update(
                n_docs=cp["splits"]["train"]["n_docs"] + 1,
                text_tokens=cp["splits"]["train"]["text_tokens"] - 1,  # one more separator
            ),
            cp["splits"]["train"]["open"].update(
                n_docs=cp["splits"]["train"]["open"]["n_docs"] + 1
            ),
            cp["progress"].update(docs_written=cp["progress"]["docs_written"] + 1),
        ),
        "separators but",
    ),
    "train-n_tokens+1": (
        lambda cp: cp["splits"]["train"].update(
            n_tokens=cp["splits"]["train"]["n_tokens"] + 1,
            text_tokens=cp["splits"]["train"]["text_tokens"] + 1,
        ),
        "disagree with its files",
    ),
    "empty_rows_skipped+1": (
        lambda cp: cp["progress"].update(
            empty_rows_skipped=cp["progress"]["empty_rows_skipped"] + 1
        ),
        "empty rows: 1 recorded, 0 in the source rows",
    ),
    "val_fraction-0.5": (
        lambda cp: cp["recipe"].update(val_fraction=0.5),
        "train documents:",
    ),
    "max_file_tokens": (
        lambda cp: cp["recipe"].update(max_file_tokens=1000),
        "more than the recipe's --max-file-tokens 1,000 allows",
    ),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forged_checkpoint_is_refused_by_the_recount(w: World, tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    interrupt(w, out)
    edit, expected = FORGERIES[name]
    h.write_checkpoint(out, _edit_checkpoint(out, edit))
    err = refused(out)
    assert expected in err, err
    assert "modified" in err and "to start over" in err, err


def test_an_intact_checkpoint_still_resumes_to_identical_bytes(w: World, tmp_path: Path) -> None:
    """The recount agrees with a real checkpoint (re-signing it changes nothing)."""
    out = tmp_path / "out"
    interrupt(w, out)
    h.write_checkpoint(out, _edit_checkpoint(out, lambda cp: None))
    done = h.run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
