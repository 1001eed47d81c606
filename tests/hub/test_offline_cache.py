"""Offline mode in-process (prep.hub.offline and the HubSource that reads the cache): Hub
sources and tokenizers resolved from a cache that the real ``hf download`` filled from the
loopback Hub, read while the Hub answers nothing (every test clears its log and checks it
stays empty)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import GPT2_DIR

from prep.encoders import load_encoder
from prep.errors import InputError, IntegrityError
from prep.hub.calls import HubOptions
from prep.hub.offline import cached_tokenizer
from prep.sources import iter_batches
from prep.sources.hub import resolve_hub_source

from .fakehub import FakeHub
from .helpers import CORPUS, DATASET, EXTRAS, GIT_FILE, ORDER, TOKENIZER_REPO, URI, tokenizer_files
from .hfcache import hf_download, run_suggested, suggested_command


def _texts(data: bytes) -> list[str]:
    return [str(t) for t in pq.read_table(io.BytesIO(data)).column("text").to_pylist()]


def _read(source, path: str) -> list[str]:  # type: ignore[no-untyped-def]
    f = next(x for x in source.files if x.path == path)
    return [t for texts, _ in iter_batches(source, f, "text", None) for t in texts]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "hf"


@pytest.fixture
def opts(home: Path) -> HubOptions:
    return HubOptions(cache_dir=home / "hub", offline=True, attempts=1, base_delay=0.0)


@pytest.fixture
def downloaded(hub: FakeHub, home: Path) -> str:
    """``acme/corpus`` on the Hub and wholly in the cache (``hf download`` of the repository);
    the Hub's log is cleared so a test can check nothing more reaches it."""
    commit = hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))
    hf_download(hub, home, DATASET, "--repo-type", "dataset")
    hub.clear_log()
    return commit


def test_a_downloaded_dataset_is_read_from_the_cache(
    hub: FakeHub, downloaded: str, opts: HubOptions
) -> None:
    source = resolve_hub_source(URI, token=None, options=opts)
    assert (source.kind, source.root, source.revision) == (
        "hf",
        f"hf://datasets/{DATASET}",
        downloaded,
    )
    assert [f.path for f in source.files] == ORDER
    for f in source.files:  # the identity a download records: size and the bytes' SHA-256
        assert f.size == len(CORPUS[f.path])
        if f.path != GIT_FILE:
            assert f.sha256 == hashlib.sha256(CORPUS[f.path]).hexdigest()
        assert _read(source, f.path) == _texts(CORPUS[f.path])
    assert not hub.requests()


def test_revisions_resolve_through_refs_or_as_a_commit(
    hub: FakeHub, home: Path, opts: HubOptions
) -> None:
    old = hub.commit("dataset", DATASET, {"a.parquet": CORPUS[ORDER[0]]}, ref="v1")
    hf_download(hub, home, DATASET, "--repo-type", "dataset", "--revision", "v1")
    new = hub.commit("dataset", DATASET, {"a.parquet": CORPUS[ORDER[1]]}, ref="v1")
    hf_download(hub, home, DATASET, "--repo-type", "dataset", "--revision", new)
    hub.clear_log()
    # refs/v1 still names the commit v1 had when it was downloaded
    assert resolve_hub_source(f"{URI}@v1", token=None, options=opts).revision == old
    pinned = resolve_hub_source(f"{URI}@{new}", token=None, options=opts)
    assert pinned.revision == new
    assert _read(pinned, "a.parquet") == _texts(CORPUS[ORDER[1]])
    at_old = resolve_hub_source(URI, token=None, options=opts, revision=old)
    assert at_old.revision == old
    assert not hub.requests()


def test_a_revision_the_cache_never_saw_names_the_download(
    hub: FakeHub, downloaded: str, home: Path, opts: HubOptions
) -> None:
    with pytest.raises(InputError) as e:
        resolve_hub_source(f"{URI}@v2", token=None, options=opts)
    msg = str(e.value)
    assert "no revision 'v2' of acme/corpus" in msg
    assert suggested_command(msg) == [
        "hf", "download", DATASET, "--repo-type", "dataset", "--revision", "v2",
        "--cache-dir", str(home / "hub"),
    ]  # fmt: skip
    with pytest.raises(InputError, match="holds no revision 'main' of acme/other"):
        resolve_hub_source("hf://datasets/acme/other", token=None, options=opts)
    assert not hub.requests()


def test_a_file_missing_from_the_cache_is_named_and_its_command_fetches_it(
    hub: FakeHub, downloaded: str, home: Path, opts: HubOptions
) -> None:
    link = home / "hub" / "datasets--acme--corpus" / "snapshots" / downloaded / ORDER[1]
    link.resolve().unlink()  # as if it had never been downloaded: no blob, no link
    link.unlink()
    with pytest.raises(InputError) as e:
        resolve_hub_source(URI, token=None, options=opts)
    msg = str(e.value)
    assert f"lacks 1 file(s) of commit {downloaded[:12]}: {ORDER[1]}" in msg
    assert e.value.path == ORDER[1]
    assert not hub.requests()
    run_suggested(hub, home, msg)  # what the user runs on the login node
    assert [r.path for r in hub.requests("GET", "/resolve/")] == [
        f"/datasets/{DATASET}/resolve/{downloaded}/{ORDER[1]}"
    ]
    hub.clear_log()
    source = resolve_hub_source(URI, token=None, options=opts)
    assert _read(source, ORDER[1]) == _texts(CORPUS[ORDER[1]])
    assert not hub.requests()


def test_a_blob_deleted_from_under_its_link_counts_as_missing(
    hub: FakeHub, downloaded: str, home: Path, opts: HubOptions
) -> None:
    blob = hashlib.sha256(CORPUS[ORDER[0]]).hexdigest()
    (home / "hub" / "datasets--acme--corpus" / "blobs" / blob).unlink()
    with pytest.raises(InputError, match=f"lacks 1 file.*{ORDER[0]}"):
        resolve_hub_source(URI, token=None, options=opts)


def test_without_the_recorded_listing_the_snapshot_is_the_listing(
    hub: FakeHub, home: Path, opts: HubOptions
) -> None:
    hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))
    hf_download(hub, home, DATASET, ORDER[1], "--repo-type", "dataset")  # one file only
    hub.clear_log()
    source = resolve_hub_source(URI, token=None, options=opts)
    assert [f.path for f in source.files] == [ORDER[1]]
    assert _read(source, ORDER[1]) == _texts(CORPUS[ORDER[1]])
    with pytest.raises(InputError) as e:
        resolve_hub_source(f"{URI}/{ORDER[2]}", token=None, options=opts)
    assert f"holds no files matching {ORDER[2]!r}" in str(e.value)
    assert "--include" in suggested_command(str(e.value))
    assert not hub.requests()


@pytest.mark.parametrize("damaged", [ORDER[0], GIT_FILE])  # an LFS blob, a git blob
def test_damaged_cached_bytes_are_refused(
    hub: FakeHub, downloaded: str, home: Path, opts: HubOptions, damaged: str
) -> None:
    blob = (home / "hub" / "datasets--acme--corpus" / "snapshots" / downloaded / damaged).resolve()
    data = bytearray(blob.read_bytes())
    data[100] ^= 0xFF
    blob.write_bytes(bytes(data))
    source = resolve_hub_source(URI, token=None, options=opts)
    with pytest.raises(IntegrityError) as e:
        _read(source, damaged)
    msg = str(e.value)
    assert f"cached copy of {damaged}" in msg and "--force-download" in msg
    assert not hub.requests()


# -- tokenizers -------------------------------------------------------------------------------


def test_a_cached_tokenizer_gives_the_local_ids(hub: FakeHub, home: Path, opts: HubOptions) -> None:
    commit = hub.commit("model", TOKENIZER_REPO, tokenizer_files())
    hf_download(hub, home, TOKENIZER_REPO)
    hub.clear_log()
    path, repo_id, got = cached_tokenizer(f"hf:{TOKENIZER_REPO}", options=opts)
    assert (repo_id, got) == (TOKENIZER_REPO, commit)
    assert path.read_bytes() == (GPT2_DIR / "tokenizer.json").read_bytes()
    remote = load_encoder(str(path.parent), doc_sep_id=None, no_doc_sep=False, tokenizer_id=None)
    texts = ["Hello world", "Hi"]
    ids = [list(a) for a in remote.encode_batch(texts, [t.encode() for t in texts])]
    assert ids == [[15496, 995], [17250]]  # GPT-2's ids (tiktoken agrees: test_golden_gpt2)
    assert remote.identity.doc_sep_id == 50256  # from the cached generation_config.json
    assert not hub.requests()


def test_a_tokenizer_missing_its_generation_config_is_refused(
    hub: FakeHub, home: Path, opts: HubOptions
) -> None:
    commit = hub.commit("model", TOKENIZER_REPO, tokenizer_files())
    hf_download(hub, home, TOKENIZER_REPO)
    snapshot = home / "hub" / "models--acme--gpt2-tokenizer" / "snapshots" / commit
    (snapshot / "generation_config.json").unlink()
    with pytest.raises(InputError) as e:
        cached_tokenizer(f"hf:{TOKENIZER_REPO}", options=opts)
    assert "generation_config.json" in str(e.value)  # it sets the separator: never guessed
    run_suggested(hub, home, str(e.value))
    assert cached_tokenizer(f"hf:{TOKENIZER_REPO}", options=opts)[2] == commit


def test_an_uncached_tokenizer_names_the_download(
    hub: FakeHub, home: Path, opts: HubOptions
) -> None:
    hub.commit("model", TOKENIZER_REPO, tokenizer_files())
    with pytest.raises(InputError) as e:
        cached_tokenizer(f"hf:{TOKENIZER_REPO}@v3", options=opts)
    assert suggested_command(str(e.value))[:5] == [
        "hf", "download", TOKENIZER_REPO, "--revision", "v3"
    ]  # fmt: skip
    assert not hub.requests()
