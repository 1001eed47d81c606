"""prep.hub and prep.sources.hub in-process against the loopback Hub: parsing, listing and
selection, pinning,
lazy verified downloads, retries and the errors' messages."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from prep.errors import InputError, IntegrityError, TransientError, UsageError
from prep.hub.calls import HubOptions
from prep.hub.paths import (
    glob_regex,
    listing_root,
    parse_dataset_uri,
    parse_tokenizer_spec,
    select_paths,
)
from prep.sources import hash_and_check, iter_batches
from prep.sources.hub import resolve_hub_source

from .fakehub import FOREVER, RESET, FakeHub
from .helpers import CORPUS, DATASET, GIT_FILE, ORDER, URI, parquet_bytes

# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "repo", "rev", "path"),
    [
        ("hf://datasets/acme/corpus", "acme/corpus", None, ""),
        ("hf://datasets/acme/corpus@v1.0", "acme/corpus", "v1.0", ""),
        (
            "hf://datasets/acme/corpus@refs%2Fconvert%2Fparquet/default/train/*.parquet",
            "acme/corpus",
            "refs/convert/parquet",
            "default/train/*.parquet",
        ),
        ("hf://datasets/acme/my_set.v2/data/", "acme/my_set.v2", None, "data"),
    ],
)
def test_dataset_uri_forms(uri: str, repo: str, rev: str | None, path: str) -> None:
    ref = parse_dataset_uri(uri)
    assert (ref.repo_id, ref.revision, ref.path) == (repo, rev, path)


@pytest.mark.parametrize(
    "uri",
    [
        "hf://acme/corpus",
        "hf://datasets/acme",
        "hf://datasets//corpus",
        "hf://models/a/b",
        "hf://datasets/acme/cor pus",
        "hf://datasets/acme/corpus@",
        "hf://datasets/a/b/../c",
        "hf://datasets/-acme/corpus",
    ],
)
def test_malformed_dataset_uri_shows_the_form(uri: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_dataset_uri(uri)
    assert uri in str(e.value)
    assert "hf://datasets/OWNER/NAME" in str(e.value) or ". or .." in str(e.value)


def test_tokenizer_spec_forms() -> None:
    ref = parse_tokenizer_spec("hf:acme/tok@refs%2Fpr%2F3")
    assert (ref.repo_id, ref.revision) == ("acme/tok", "refs/pr/3")
    for bad in ("hf:acme", "hf:acme/tok/sub", "hf:acme/tok@"):
        with pytest.raises(UsageError, match=r"hf:OWNER/NAME\[@REVISION\]"):
            parse_tokenizer_spec(bad)


# -- selection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("data/*.parquet", "data/a.parquet", True),
        ("data/*.parquet", "data/sub/a.parquet", False),  # * stays in its segment
        ("**/*.parquet", "a.parquet", True),  # ** is zero or more directories
        ("**/*.parquet", "x/y/a.parquet", True),
        ("data/**/*.parquet", "data/a.parquet", True),
        ("data/**", "data/x/y.txt", True),
        ("data/train-0000[0-1].parquet", "data/train-00001.parquet", True),
        ("data/train-0000[!0].parquet", "data/train-00000.parquet", False),
        ("d?ta/a.parquet", "d/ta/a.parquet", False),
        ("data/a+b.parquet", "data/a+b.parquet", True),  # regex characters are literal
    ],
)
def test_glob_semantics(pattern: str, path: str, hit: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is hit


def test_path_selection_and_listing_root() -> None:
    paths = [
        "README.md",
        "a.parquet",
        "data/x.parquet",
        "data/y.csv",
        "data/s/z.parquet",
        "database/w.parquet",
    ]
    assert select_paths(paths, "") == [
        "a.parquet",
        "data/s/z.parquet",
        "data/x.parquet",
        "database/w.parquet",
    ]
    assert select_paths(paths, "data") == ["data/s/z.parquet", "data/x.parquet"]
    assert select_paths(paths, "data/x.parquet") == ["data/x.parquet"]
    assert select_paths(paths, "data/*") == ["data/x.parquet", "data/y.csv"]
    assert [
        listing_root(p)
        for p in (
            "",
            "data",
            "data/x.parquet",
            "data/s/*.parquet",
            "**/*.parquet",
            "data/*/z.parquet",
        )
    ] == ["", "data", "data", "data/s", "", "data"]


# -- resolving and listing --------------------------------------------------------------------


def test_resolves_once_lists_sorted_with_lfs_hashes(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    src = resolve_hub_source(URI, token=None, options=options)
    assert (src.kind, src.uri, src.revision) == ("hf", URI, corpus_commit)
    assert [f.path for f in src.files] == ORDER  # README.md and .gitattributes left out
    for f in src.files:
        assert f.size == len(CORPUS[f.path])
        lfs = None if f.path == GIT_FILE else hashlib.sha256(CORPUS[f.path]).hexdigest()
        assert (f.sha256, f.expected_sha256) == (lfs, lfs)
    assert len(hub.requests(contains="/revision/main")) == 1
    tree = hub.requests(contains="/tree/")
    assert len(tree) > 1  # paginated, three entries a page
    assert all(corpus_commit in r.path for r in tree)
    assert not hub.requests(contains="/resolve/")  # listing downloads nothing


def test_a_given_revision_is_used_as_is(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    hub.commit("dataset", DATASET, {"data/new.parquet": parquet_bytes(["new"])})  # main moves
    src = resolve_hub_source(URI, token=None, revision=corpus_commit, options=options)
    assert src.revision == corpus_commit
    assert [f.path for f in src.files] == ORDER
    assert not hub.requests(contains="/revision/")


def test_url_encoded_revision_with_slash(hub: FakeHub, options: HubOptions) -> None:
    hub.commit("dataset", DATASET, {"README.md": b"no parquet on main"})
    sha = hub.commit(
        "dataset",
        DATASET,
        {"default/train/0000.parquet": parquet_bytes(["x"])},
        ref="refs/convert/parquet",
    )
    src = resolve_hub_source(f"{URI}@refs%2Fconvert%2Fparquet", token=None, options=options)
    assert src.revision == sha
    assert [f.path for f in src.files] == ["default/train/0000.parquet"]
    assert hub.requests(contains="/revision/refs/convert/parquet")


def test_glob_lists_only_its_directory(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    src = resolve_hub_source(f"{URI}/data/train-*.parquet", token=None, options=options)
    assert [f.path for f in src.files] == ["data/train-00000.parquet", "data/train-00001.parquet"]
    assert all(r.path.endswith(f"{corpus_commit}/data") for r in hub.requests(contains="/tree/"))


def test_missing_repo_revision_and_files_are_input_errors(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    with pytest.raises(InputError, match=r"no repository hf://datasets/acme/nope.*HF_TOKEN"):
        resolve_hub_source("hf://datasets/acme/nope", token=None, options=options)
    with pytest.raises(InputError, match=r"revision 'v9'.*does not exist.*refs%2Fconvert"):
        resolve_hub_source(f"{URI}@v9", token=None, options=options)
    with pytest.raises(InputError) as e:
        resolve_hub_source(f"{URI}/data/*.json", token=None, options=options)
    assert "holds no files matching 'data/*.json'" in str(e.value)
    assert "data/train-00000.parquet" in str(e.value)  # what is there
    with pytest.raises(InputError, match="holds no files matching 'nowhere/"):
        resolve_hub_source(f"{URI}/nowhere/*.parquet", token=None, options=options)
    hub.commit("dataset", "acme/empty", {"README.md": b"x"})
    with pytest.raises(InputError,
                       match=r"holds no Parquet, Arrow or JSON Lines files.*README\.md"):
        resolve_hub_source("hf://datasets/acme/empty", token=None, options=options)
    assert len(hub.requests(contains="/revision/v9")) == 1  # not retried


def test_private_repo_needs_a_token(hub: FakeHub, options: HubOptions) -> None:
    hub.commit("dataset", DATASET, CORPUS, token="hf_secret")
    with pytest.raises(InputError) as e:
        resolve_hub_source(URI, token=None, options=options)
    assert "401" in str(e.value) and "--token" in str(e.value) and "HF_TOKEN" in str(e.value)
    with pytest.raises(InputError, match="the token given was not accepted"):
        resolve_hub_source(URI, token="hf_wrong", options=options)
    src = resolve_hub_source(URI, token="hf_secret", options=options)
    src.local_path(src.files[0])
    assert all(r.auth == "Bearer hf_secret" for r in hub.requests(contains=src.revision or "?"))


# -- downloading ------------------------------------------------------------------------------


def test_downloads_each_file_when_reached_and_reads_it(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    src = resolve_hub_source(URI, token=None, options=options)
    seen = []
    for i, f in enumerate(src.files):
        assert not hub.requests("GET", f.path)
        texts = [t for batch, _ in iter_batches(src, f, "text", None) for t in batch]
        assert texts == pq.read_table(io.BytesIO(CORPUS[f.path]))["text"].to_pylist()
        seen.append(len(hub.requests("GET", f.path)))
        for later in src.files[i + 1 :]:
            assert not hub.requests(contains=later.path)
    assert seen == [1, 1, 1]
    git = src.files[ORDER.index(GIT_FILE)]
    assert git.sha256 == hashlib.sha256(CORPUS[GIT_FILE]).hexdigest()  # hashed when read
    for f in src.files:  # a second look neither downloads nor re-verifies
        assert src.local_path(f).read_bytes() == CORPUS[f.path]
        hash_and_check(src, f)
    assert len(hub.requests("GET", "/resolve/")) == 3
    assert all(corpus_commit in r.path for r in hub.requests(contains="/resolve/"))


@pytest.mark.parametrize("path", [ORDER[0], GIT_FILE])
def test_corrupted_bytes_are_refused(
    hub: FakeHub, corpus_commit: str, options: HubOptions, path: str
) -> None:
    hub.corrupt(corpus_commit, path)
    src = resolve_hub_source(URI, token=None, options=options)
    f = src.files[ORDER.index(path)]
    with pytest.raises(IntegrityError) as e:
        src.local_path(f)
    msg = str(e.value)
    assert path in msg and "twice" in msg and "not used" in msg
    assert ("SHA-256" if path != GIT_FILE else "git id") in msg
    assert len(hub.requests("GET", path)) == 2  # downloaded once more before refusing


def test_a_damaged_cached_copy_is_downloaded_again(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    src = resolve_hub_source(URI, token=None, options=options)
    f = src.files[0]
    local = src.local_path(f)
    blob = local.resolve()
    blob.write_bytes(b"\0" + blob.read_bytes()[1:])  # bit rot in the cache
    again = resolve_hub_source(URI, token=None, revision=corpus_commit, options=options)
    assert again.local_path(again.files[0]).read_bytes() == CORPUS[f.path]
    assert len(hub.requests("GET", f.path)) == 2


def test_transient_failures_are_retried(
    hub: FakeHub, corpus_commit: str, options: HubOptions, caplog: pytest.LogCaptureFixture
) -> None:
    hub.fail("/revision/main", RESET, times=2)
    hub.fail(ORDER[0], 503, times=2, method="GET")
    hub.fail(ORDER[1], RESET, times=1, method="HEAD")
    src = resolve_hub_source(URI, token=None, options=options)
    for f in src.files[:2]:
        assert src.local_path(f).read_bytes() == CORPUS[f.path]
    assert len(hub.requests(contains="/revision/main")) == 3
    assert len(hub.requests("GET", ORDER[0])) == 3
    assert "retrying" in caplog.text and "attempt 3 of 3" in caplog.text


def test_persistent_failure_is_a_transient_error(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    src = resolve_hub_source(URI, token=None, options=options)
    hub.fail(ORDER[1], 503, times=FOREVER, method="GET")
    with pytest.raises(TransientError) as e:
        src.local_path(src.files[1])
    msg = str(e.value)
    assert f"downloading {ORDER[1]} from hf://datasets/{DATASET}@{corpus_commit[:12]}" in msg
    assert "HTTP 503" in msg and "3 attempts" in msg and "--resume" in msg
    assert e.value.exit_code == 75
    hub.fail("/revision/", RESET, times=FOREVER)
    with pytest.raises(TransientError, match=r"resolving revision 'main'.*3 attempts"):
        resolve_hub_source(URI, token=None, options=options)


def test_unreachable_endpoint_is_transient(tmp_path: Path) -> None:
    import socket

    # A port bound but never listened on: connecting is refused, and as it stays bound for
    # the whole test no other test's server (run beside it by pytest-xdist) can take it.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        opts = HubOptions(
            endpoint=f"http://127.0.0.1:{port}", cache_dir=tmp_path, attempts=2, base_delay=0.0
        )
        with pytest.raises(TransientError, match=r"ConnectError.*2 attempts"):
            resolve_hub_source(URI, token=None, options=opts)


def _rewrite_in_place(path: Path) -> None:
    """Same size, other bytes, same inode (what an in-place sync of the cache would do)."""
    data = path.read_bytes()
    with open(path, "r+b") as f:
        f.write(bytes(b ^ 0x55 for b in data))
    assert path.stat().st_size == len(data)


def test_a_cached_file_rewritten_while_it_is_read_is_refused(
    hub: FakeHub, corpus_commit: str, options: HubOptions
) -> None:
    """Once downloaded, a Hub file is a local file in the cache, open to the same race as a
    local source: its rows must not go on after its bytes changed under the reader."""
    src = resolve_hub_source(URI, token=None, options=options)
    f = src.files[0]
    rows = iter_batches(src, f, "text", None)
    next(rows)  # the file was verified, hashed and its first record batch read
    _rewrite_in_place(src.local_path(f))
    with pytest.raises(IntegrityError) as e:
        next(rows)
    assert f"source file {f.path} changed while prep was reading it" in str(e.value)
    assert "checkpoint is intact" in str(e.value)
