"""``--tokenizer hf:OWNER/NAME[@REVISION]`` in-process: the files at a pinned commit, in one
snapshot directory, giving the same encoder as the local files."""

from __future__ import annotations

import pytest
from conftest import GPT2_DIR

from prep.encoders import load_encoder
from prep.errors import InputError
from prep.hub.calls import HubOptions
from prep.hub.files import download_tokenizer

from .fakehub import FakeHub
from .helpers import TOKENIZER_REPO, tokenizer_files


def test_downloads_both_files_at_the_pinned_commit(hub: FakeHub, options: HubOptions) -> None:
    files = tokenizer_files()
    v1 = hub.commit("model", TOKENIZER_REPO, files, ref="v1", git_files=("generation_config.json",))
    hub.commit("model", TOKENIZER_REPO, {"tokenizer.json": b"{}"})  # main differs
    path, repo_id, commit = download_tokenizer(
        f"hf:{TOKENIZER_REPO}@v1", token=None, options=options
    )
    assert (repo_id, commit) == (TOKENIZER_REPO, v1)
    assert path.name == "tokenizer.json" and path.parent.name == v1
    assert path.read_bytes() == files["tokenizer.json"]
    assert (path.parent / "generation_config.json").read_bytes() == files["generation_config.json"]
    assert all(v1 in r.path for r in hub.requests(contains="/resolve/"))
    hub.clear_log()
    again = download_tokenizer(f"hf:{TOKENIZER_REPO}", token=None, revision=v1, options=options)
    assert again == (path, repo_id, commit)
    assert not hub.requests(contains="/revision/")  # pinned: never resolved again
    assert not hub.requests("GET", "/resolve/")  # cached


def test_same_ids_as_the_local_tokenizer(hub: FakeHub, options: HubOptions) -> None:
    hub.commit("model", TOKENIZER_REPO, tokenizer_files())
    path, _, _ = download_tokenizer(f"hf:{TOKENIZER_REPO}", token=None, options=options)
    local = load_encoder(str(GPT2_DIR), doc_sep_id=None, no_doc_sep=False, tokenizer_id=None)
    remote = load_encoder(str(path.parent), doc_sep_id=None, no_doc_sep=False, tokenizer_id=None)
    texts = ["Hello world", "Hi", "a literal <|endoftext|> inside", "ünïcödé 🙂"]
    utf8 = [t.encode() for t in texts]
    got = [list(a) for a in remote.encode_batch(texts, utf8)]
    assert got == [list(a) for a in local.encode_batch(texts, utf8)]
    assert got[:2] == [[15496, 995], [17250]]
    assert remote.identity.doc_sep_id == 50256
    assert remote.identity.sha256 == local.identity.sha256


def test_generation_config_is_optional(hub: FakeHub, options: HubOptions) -> None:
    files = tokenizer_files()
    hub.commit("model", TOKENIZER_REPO, {"tokenizer.json": files["tokenizer.json"]})
    path, _, _ = download_tokenizer(f"hf:{TOKENIZER_REPO}", token=None, options=options)
    assert not (path.parent / "generation_config.json").exists()
    assert not hub.requests(contains="generation_config.json")  # the listing said so


def test_a_repo_without_tokenizer_json(hub: FakeHub, options: HubOptions) -> None:
    hub.commit("model", TOKENIZER_REPO, {"config.json": b"{}", "vocab.txt": b"a\n"})
    with pytest.raises(InputError) as e:
        download_tokenizer(f"hf:{TOKENIZER_REPO}", token=None, options=options)
    assert "has no tokenizer.json" in str(e.value) and "config.json, vocab.txt" in str(e.value)
    with pytest.raises(InputError, match="no repository hf:acme/missing"):
        download_tokenizer("hf:acme/missing", token=None, options=options)


def test_tokenizer_config_is_downloaded_for_the_separator(
    hub: FakeHub, options: HubOptions
) -> None:
    """A repository without generation_config.json: the separator is tokenizer_config.json's
    eos_token (GPT-2's <|endoftext|> is 50256), so that file comes down too."""
    files = {
        "tokenizer.json": tokenizer_files()["tokenizer.json"],
        "tokenizer_config.json": b'{"eos_token": "<|endoftext|>"}',
    }
    hub.commit("model", TOKENIZER_REPO, files)
    path, _, _ = download_tokenizer(f"hf:{TOKENIZER_REPO}", token=None, options=options)
    assert (path.parent / "tokenizer_config.json").read_bytes() == files["tokenizer_config.json"]
    enc = load_encoder(str(path.parent), doc_sep_id=None, no_doc_sep=False, tokenizer_id=None)
    assert enc.identity.doc_sep_id == 50256
    assert enc.identity.doc_sep_from == str(path.parent / "tokenizer_config.json")
