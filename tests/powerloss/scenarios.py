"""The recorded runs: every format from scratch (and one packed ``--pack fixed``), a resume
writing into a staging directory a stopped run left, a refresh's swap, a merge of parts,
and a publish into a mount point. Each one's expected dataset is published by the same
command run outside the recorder."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import harness as h
from powerloss import Scenario, argv_of

OUT = "a/b/out"  # --out below the volume: its parents are created by the run
# Small batches and a checkpoint after each: several checkpoints and rollovers per run.
RUN = ("--batch-size", "64", "--checkpoint-interval", "0.000001", "--workers", "1")
CORPUS = h.Corpus(n_docs=400, n_files=2, max_file_tokens=1500, tokenizer_docs=400,
                  vocab_size=300, dataset="pl")
FORMATS = ("datatrove", "llmc", "llmc-llama3", "megatron", "npy", "olmo", "raw")
NAMES = (*FORMATS, "fixed", "resume", "refresh", "merge", "mount-out", "copiers")


_WORLDS: dict[int, h.World] = {}


def world(factory: object) -> h.World:
    """The session's corpus (built once per ``tmp_path_factory``), with the dataset the
    recorded command publishes uninterrupted as its reference."""
    key = id(factory)
    if key not in _WORLDS:
        root = factory.mktemp("powerloss")  # type: ignore[attr-defined]
        w = h.make_world(root, CORPUS)
        ref = root / "ref" / "out"
        done = h.run(w.args(ref, *RUN))
        assert done.returncode == 0, done.stderr
        _WORLDS[key] = h.World(root, CORPUS, w.source, w.tokenizer, w.files, ref,
                               h.dir_bytes(ref))
    return _WORLDS[key]


def _prepare(w: h.World, *extra: str) -> Callable[[Path], list[str]]:
    return lambda volume: ["prepare", *w.args(volume / OUT, *RUN, *extra)]


def _published(command: list[str], where: Path) -> dict[str, bytes]:
    """Run ``command`` (outside the recorder) to its end; the dataset it published."""
    done = subprocess.run(argv_of(command), capture_output=True, text=True, check=False,
                          timeout=h.TIMEOUT)
    assert done.returncode == 0, done.stderr
    return h.dir_bytes(where)


def fresh(w: h.World, work: Path, fmt: str) -> Scenario:
    if fmt == "llmc":  # the default: the world's own reference
        return Scenario(fmt, _prepare(w), w.reference)
    cmd = _prepare(w, "--format", fmt)
    return Scenario(fmt, cmd, _published(cmd(work / "ref"), work / "ref" / OUT))


def fixed(w: h.World, work: Path) -> Scenario:
    """``--pack fixed``, in an indexed format: documents run across files, and each open
    file's index is rebuilt from the pieces its checkpoint keeps."""
    cmd = _prepare(w, "--format", "megatron", "--pack", "fixed")
    return Scenario("fixed", cmd, _published(cmd(work / "ref"), work / "ref" / OUT))


def resumed(w: h.World, work: Path) -> Scenario:
    """The recorded run resumes a staging directory that a run stopped at its third
    checkpoint left (SIGKILL), and writes on in it."""
    base = _prepare(w)
    cmd = _prepare(w, "--resume")
    stop = {"target": "prep.state.checkpoint.atomic_write_bytes", "when": "after", "nth": 3,
            "action": "kill"}

    def setup(backing: Path) -> None:
        done = h.run(base(backing)[1:], faults=stop)
        assert done.returncode == -9, done.stderr
        assert (backing / (OUT + ".incomplete")).is_dir()

    return Scenario("resume", cmd, w.reference, setup=setup)


def refresh(w: h.World, work: Path) -> Scenario:
    """An incremental refresh of a published version after a file was added: the swap."""
    old_w = w.copy(work / "old-src")
    new_w = w.copy(work / "new-src")
    h.write_plain(new_w.source / "part-00009.parquet", [f"new doc {i}" for i in range(60)])
    old_cmd = _prepare(old_w)
    ref = work / "ref"
    old = _published(old_cmd(ref), ref / OUT)
    new_cmd = lambda volume: ["prepare", *new_w.args(volume / OUT, *RUN), "--refresh"]  # noqa: E731
    shutil.copytree(ref / OUT, work / "ref2" / OUT)
    new = _published(new_cmd(work / "ref2"), work / "ref2" / OUT)
    assert new != old

    def setup(backing: Path) -> None:
        shutil.copytree(ref / OUT, backing / OUT)

    return Scenario("refresh", new_cmd, new, before=old, setup=setup)


def merge(w: h.World, work: Path) -> Scenario:
    """``prep merge`` of two published parts (hard links into DIR.merging, renamed)."""

    def parts(volume: Path) -> None:
        for i in range(2):
            done = h.run(w.args(volume / OUT, *RUN, "--part", f"{i}/2"))
            assert done.returncode == 0, done.stderr

    ref = work / "ref"
    parts(ref)
    cmd = lambda volume: ["merge", str(volume / OUT)]  # noqa: E731
    return Scenario("merge", cmd, _published(cmd(ref), ref / OUT), resume=(), setup=parts)


def mount_out(w: h.World, work: Path) -> Scenario:
    """``--out`` is a mount point: staging inside it, its files renamed in, manifest last."""
    ref = work / "ref" / "out"
    cmd = lambda volume: ["prepare", *w.args(volume, *RUN)]  # noqa: E731
    return Scenario("mount-out", cmd, _published(cmd(ref), ref), out="", mount_out=True)


def copiers(w: h.World, work: Path) -> Scenario:
    """Batches large enough that copier processes (``prep.procs.copiers``) write the shards' ids
    (``harness.write_copied``), where the world's batches hold a few KB (written by the
    committing process itself); the world's tokenizer."""
    src = work / "copied-src"
    h.write_copied(src, 2400, 2)
    args = ("--source", str(src), "--tokenizer", str(w.tokenizer), "--dataset", "plc",
            "--max-file-tokens", "120000", "--checkpoint-interval", "0.000001",
            "--workers", "1")
    cmd = lambda volume: ["prepare", "--out", str(volume / OUT), *args]  # noqa: E731
    ref = work / "ref"
    expected = _published(cmd(ref), ref / OUT)
    copied = h.provenance(ref / OUT)["copiers"]
    assert copied is not None and copied["bytes_written"] > 0, copied  # the copiers wrote
    return Scenario("copiers", cmd, expected)


def build(name: str, w: h.World, work: Path) -> Scenario:
    work.mkdir(parents=True, exist_ok=True)
    if name in FORMATS:
        return fresh(w, work, name)
    return {"fixed": fixed, "resume": resumed, "refresh": refresh, "merge": merge,
            "mount-out": mount_out, "copiers": copiers}[name](w, work)
