"""Forged checkpoints (issue 23): the digest of ``checkpoint.json`` is no signature, so a
forger can edit the file and recompute it. Resume must then believe no claim the staging
directory and the source can disprove: each forgery here re-signs the checkpoint as a forger
would, and is refused (exit 1, a message naming the claim, staging byte-for-byte as it was,
no traceback) or, where the forged recipe agrees with everything committed, published with
a manifest that says truthfully what was done: byte-identical to a fresh run of that recipe.

Which verdict is right is decided here, independently of prep: document lengths are read
from the shards with numpy (llm.c layout, separators prepended), the cut rule is
re-implemented from the README, and a row's split comes from the spec's SHA-256 rule.

One interrupted run (in-process, stopped between batches once 2,400 rows are committed) is
shared by every test, which resumes its own copy."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness as h
import numpy as np
import pytest
from harness import World

import prep

CORPUS = h.Corpus(n_docs=6000, n_files=3, max_file_tokens=3000, empty_every=97)
STOP_AT_ROWS = 2400
Edit = Callable[[dict[str, Any]], object]


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> World:
    return h.make_world(tmp_path_factory.mktemp("forged"), CORPUS)


def stop_a_run(w: World, out: Path, **recipe: object) -> Path:
    """The staging directory of a run stopped (``stop=``, as a SIGTERM would) at the first
    batch after 2,400 committed rows, with a checkpoint after every batch."""
    with pytest.raises(prep.Interrupted):
        prep.prepare(
            source=str(w.source), tokenizer=str(w.tokenizer), out=str(out),
            max_file_tokens=CORPUS.max_file_tokens, dataset=CORPUS.dataset,
            batch_size=50, checkpoint_interval=1e-6, workers=2,
            stop=lambda: h.rows_committed(out) >= STOP_AT_ROWS, **recipe,
        )
    cp = h.read_checkpoint(out)
    assert cp is not None and cp["progress"]["rows_visited"] >= STOP_AT_ROWS
    assert len(cp["splits"]["train"]["sealed"]) >= 5, "too few cuts to check"
    return h.staging_of(out)


@pytest.fixture(scope="module")
def stopped(w: World, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stop_a_run(w, tmp_path_factory.mktemp("stopped") / "out")


@pytest.fixture(scope="module")
def stopped_without_separator(w: World, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same, ``--no-doc-sep``: the shards cannot tell documents apart."""
    return stop_a_run(w, tmp_path_factory.mktemp("stopped-no-sep") / "out", no_doc_sep=True)


def forged(stopped: Path, tmp_path: Path, edit: Edit) -> tuple[Path, dict[str, Any]]:
    """A copy of the stopped run's staging under ``tmp_path/out``, its checkpoint edited
    and re-signed; returns ``out`` and the checkpoint as it was."""
    out = tmp_path / "out"
    shutil.copytree(stopped, h.staging_of(out))
    cp = h.read_checkpoint(out)
    assert cp is not None
    original = json.loads(json.dumps(cp))
    edit(cp)
    h.write_checkpoint(out, cp)
    return out, original


def refused(cli: Any, out: Path) -> str:
    """Resume and expect a refusal that changed nothing; returns stderr."""
    before = h.tree(h.staging_of(out))
    r = cli("prepare", "--out", out, "--resume")
    assert r.code == 1, r.err
    h.no_traceback(r.err)
    assert "prep: error:" in r.err and "start over" in r.err, r.err
    assert h.tree(h.staging_of(out)) == before, "the refusal changed the staging directory"
    assert not out.exists()
    return str(r.err)


def published_as(cli: Any, w: World, out: Path, tmp_path: Path, *recipe: object) -> None:
    """Resume, expect exit 0, and the published dataset byte-identical (shards and
    manifest) to a fresh, uninterrupted run with ``recipe`` added: the manifest is true."""
    r = cli("prepare", "--out", out, "--resume")
    assert r.code == 0, r.err
    fresh = tmp_path / "fresh"
    r = cli("prepare", *w.args(fresh, "--quiet", *recipe))
    assert r.code == 0, r.err
    assert h.dir_bytes(out) == h.dir_bytes(fresh)


# -- what the shards and the source say, read here -----------------------------------------


def separator(w: World) -> int:
    sep: int = json.loads((w.tokenizer / "generation_config.json").read_text())["eos_token_id"]
    return sep


def doc_lengths(w: World, staging: Path, name: str, n: int) -> list[int]:
    """The lengths (separator included) of the documents of an llm.c shard's first ``n``
    ids: each starts at a separator (``--sep-position prepend``)."""
    raw = (staging / name).read_bytes()[1024 : 1024 + 2 * n]
    at = np.flatnonzero(np.frombuffer(raw, dtype="<u2") == separator(w))
    return np.diff(np.append(at, n)).tolist()


def train_files(w: World, staging: Path, cp: dict[str, Any]) -> list[list[int]]:
    """Each train file's document lengths, in order."""
    train = cp["splits"]["train"]
    files = [*train["sealed"], train["open"]]
    return [doc_lengths(w, staging, f["name"], f["n_tokens"]) for f in files]


def cuts_agree(files: list[list[int]], max_file_tokens: int) -> bool:
    """Whether files of these document lengths are what the README's rule makes with
    ``max_file_tokens``: a file rolls over before a document that would cross it, unless
    the file is still empty (a long document fills one alone)."""
    for k, docs in enumerate(files):
        if len(docs) > 1 and sum(docs) > max_file_tokens:
            return False
        if k + 1 < len(files) and sum(docs) + files[k + 1][0] <= max_file_tokens:
            return False
    return True


def train_docs_from_source(w: World, cp: dict[str, Any]) -> list[list[int]]:
    """Each train file's document lengths, from the source: the committed rows in order,
    empty ones skipped, the train documents (the spec's split rule) tokenized by
    ``tokenizers`` itself, cut into files as the checkpoint counts their documents."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(w.tokenizer / "tokenizer.json"))
    rows = [t for f in w.files for t in f][: cp["progress"]["rows_visited"]]
    lengths = [len(tok.encode(t, add_special_tokens=False).ids) for t in rows if is_train_doc(t)]
    train = cp["splits"]["train"]
    out = []
    for f in [*train["sealed"], train["open"]]:
        out.append(lengths[: f["n_docs"]])
        lengths = lengths[f["n_docs"] :]
        assert sum(out[-1]) == f["n_tokens"], "the oracle disagrees with the real run"
    return out


def last_row(w: World, cp: dict[str, Any]) -> str:
    """The text of the last committed row (files are read in order, unshuffled)."""
    rows = [t for f in w.files for t in f]
    return rows[cp["progress"]["rows_visited"] - 1]


def is_train_doc(text: str, seed: int = 1337, val_fraction: float = 0.01) -> bool:
    """docs/format.md's stream: empty after strip is skipped; else val iff the first 8 bytes of
    SHA-256(f"{seed}\\0{text}") are below val_fraction * 2**64."""
    digest = hashlib.sha256(f"{seed}\0{text}".encode()).digest()
    return bool(text.strip()) and int.from_bytes(digest[:8], "big") >= val_fraction * 2**64


# -- the tests -------------------------------------------------------------------------------


def test_finished_before_the_end_of_the_stream_is_refused(
    stopped: Path, tmp_path: Path, cli: Any
) -> None:
    """The issue's first case: ``finished: true`` published 2,464 of 6,189 rows, exit 0."""
    out, cp = forged(stopped, tmp_path, lambda cp: cp["progress"].update(finished=True))
    err = refused(cli, out)
    rows = cp["progress"]["rows_visited"]
    assert (f"says the stream is finished, but {rows:,} of the stream's 6,000 rows were "
            "committed and no budget stops it there (--max-documents none; --train-tokens "
            "none") in err, err


def test_max_documents_below_the_committed_rows_is_refused(
    stopped: Path, tmp_path: Path, cli: Any
) -> None:
    """The issue's second case: ``max_documents`` null -> 1 published 2,263 documents."""
    out, cp = forged(stopped, tmp_path, lambda cp: cp["recipe"].update(max_documents=1))
    err = refused(cli, out)
    rows = cp["progress"]["rows_visited"]
    assert f"{rows:,} rows were committed, but the recipe's --max-documents 1 stops" in err, err


def test_max_documents_at_the_committed_rows_publishes_what_it_says(
    w: World, stopped: Path, tmp_path: Path, cli: Any
) -> None:
    """A budget that agrees with everything committed is a recipe a fresh run could have
    had: published, and the manifest says so (a fresh --max-documents run, byte for byte)."""
    rows = h.rows_committed(stopped.with_name("out"))

    def edit(cp: dict[str, Any]) -> None:
        cp["recipe"]["max_documents"] = rows
        cp["progress"]["finished"] = True

    out, _ = forged(stopped, tmp_path, edit)
    published_as(cli, w, out, tmp_path, "--max-documents", rows)
    assert h.manifest(out)["recipe"]["max_documents"] == rows


def test_a_train_budget_reached_without_finishing_is_refused(
    stopped: Path, tmp_path: Path, cli: Any
) -> None:
    def edit(cp: dict[str, Any]) -> None:
        cp["recipe"]["train_tokens"] = cp["splits"]["train"]["n_tokens"]

    out, cp = forged(stopped, tmp_path, edit)
    err = refused(cli, out)
    tokens = cp["splits"]["train"]["n_tokens"]
    assert (f"train holds {tokens:,} tokens, so the recipe's --train-tokens {tokens:,} was "
            "reached, yet the run is not finished") in err, err


@pytest.mark.parametrize("separator", [True, False], ids=["separator", "no-doc-sep"])
def test_finished_at_a_train_budget_is_checked_against_the_last_document(
    w: World, request: pytest.FixtureRequest, tmp_path: Path, cli: Any, separator: bool
) -> None:
    """``finished`` with --train-tokens set to the train tokens committed holds only when
    the last row committed was the train document that reached it; a budget the tokens
    before that document already reached (the stream would have stopped a document
    earlier) never does. The last document's length comes from the shards' separators, or,
    with ``--no-doc-sep``, from the source (tokenized again on resume)."""
    stopped = request.getfixturevalue("stopped" if separator else "stopped_without_separator")
    cp = h.read_checkpoint(stopped.with_name("out"))
    assert cp is not None
    tokens = cp["splits"]["train"]["n_tokens"]
    files = train_files(w, stopped, cp) if separator else train_docs_from_source(w, cp)
    last, train_last = files[-1][-1], is_train_doc(last_row(w, cp))

    def budget(value: int) -> Edit:
        return lambda cp: (cp["recipe"].update(train_tokens=value),
                           cp["progress"].update(finished=True))

    out, _ = forged(stopped, tmp_path / "early", budget(tokens - last))
    err = refused(cli, out)
    assert (f"train already held {tokens - last:,} tokens before its last document" in err
            if train_last else "no budget stops it there" in err), err
    out, _ = forged(stopped, tmp_path / "exact", budget(tokens))
    if train_last:
        extra = () if separator else ("--no-doc-sep",)
        published_as(cli, w, out, tmp_path, "--train-tokens", tokens, *extra)
    else:
        err = refused(cli, out)
        assert "no budget stops it there" in err, err


@pytest.mark.parametrize("which", ["plus-one", "nearest-other-verdict"])
@pytest.mark.parametrize("separator", [True, False], ids=["separator", "no-doc-sep"])
def test_max_file_tokens_changed_is_refused_unless_every_cut_agrees(
    w: World, request: pytest.FixtureRequest, tmp_path: Path, cli: Any, which: str,
    separator: bool,
) -> None:
    """The issue's third case: ``max_file_tokens`` changed by 1 mixed two cutting rules.
    The forged value is checked against every cut so far: refused when a file was cut
    where the forged rule would not have cut it (or holds more than it allows), published
    as a fresh run with that value when every cut agrees. ``plus-one`` is the issue's edit;
    the other takes the value nearest to 3,000 with the opposite verdict, so both verdicts
    are tested. With ``--no-doc-sep`` the shards do not tell where documents start: resume
    then tokenizes the first document of each file from the replayed source."""
    stopped = request.getfixturevalue("stopped" if separator else "stopped_without_separator")
    cp = h.read_checkpoint(stopped.with_name("out"))
    assert cp is not None
    files = train_files(w, stopped, cp) if separator else train_docs_from_source(w, cp)
    assert cuts_agree(files, 3000), "the oracle disagrees with the real run"
    value = 3001
    if which != "plus-one":
        value = next(v for d in range(1, 200) for v in (3001 + d, 3000 - d)
                     if cuts_agree(files, v) != cuts_agree(files, 3001))
    out, _ = forged(stopped, tmp_path, lambda cp: cp["recipe"].update(max_file_tokens=value))
    if cuts_agree(files, value):
        extra = () if separator else ("--no-doc-sep",)
        published_as(cli, w, out, tmp_path, "--max-file-tokens", value, *extra)
    else:
        err = refused(cli, out)
        assert f"--max-file-tokens {value:,}" in err, err


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, "recipe: split_column holds int 5, expected a string or None"),
        (["split"], "recipe: split_column holds list ['split'], expected a string or None"),
        ("text", "recipe: --split-column 'text' must name a column of its own"),
    ],
    ids=["int", "list", "the-text-column"],
)
def test_a_forged_split_column_is_refused_with_a_message(
    stopped: Path, tmp_path: Path, cli: Any, value: object, expected: str
) -> None:
    """The issue's fourth case: a forged ``split_column`` gave a raw ``TypeError``."""
    out, _ = forged(stopped, tmp_path, lambda cp: cp["recipe"].update(split_column=value))
    err = refused(cli, out)
    assert expected in err, err


def test_a_forged_separator_position_is_refused(stopped: Path, tmp_path: Path, cli: Any) -> None:
    out, _ = forged(stopped, tmp_path, lambda cp: cp["recipe"].update(sep_position="append"))
    err = refused(cli, out)
    assert ("train-00000.bin: does not end with the separator" in err
            and "as --sep-position append puts it" in err), err


def test_a_shard_name_that_leaves_staging_is_refused_before_any_file_is_read(
    stopped: Path, tmp_path: Path, cli: Any
) -> None:
    """A forged name must never be opened (the open shard is cut back on resume: a path out
    of staging would truncate someone else's file)."""
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"keep me" * 1000)
    out, _ = forged(stopped, tmp_path, lambda cp: cp["splits"]["train"]["open"].update(
        name="../victim.bin"))
    err = refused(cli, out)
    assert "is named '../victim.bin', not 'train-" in err, err
    assert victim.read_bytes() == b"keep me" * 1000
