"""Hub URIs and path selection (``prep.hub.paths``): parsing with messages that give the
form to write, and globs checked against the oracle the module names, ``glob.glob(...,
recursive=True)`` run over the same tree written to disk."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from prep.errors import UsageError
from prep.hub.paths import (
    HubRef,
    dataset_uri,
    listing_root,
    parse_dataset_uri,
    parse_tokenizer_spec,
    select_paths,
)

TREE = [
    "a.parquet", "b.txt", "data/train-0.parquet", "data/train-1.parquet", "data/val-0.parquet",
    "data/en/x.parquet", "data/en/deep/y.parquet", "data/fr/z.parquet", "data/readme.md",
    "other/q.parquet", "data[1]/w.parquet",
]


@pytest.mark.parametrize(("uri", "ref"), [
    ("hf://datasets/org/name", HubRef("org/name", None, "")),
    ("hf://datasets/org/name/", HubRef("org/name", None, "")),
    ("hf://datasets/o-1/n.a_me@v1.0/data/*.parquet",
     HubRef("o-1/n.a_me", "v1.0", "data/*.parquet")),
    ("hf://datasets/org/name@refs%2Fconvert%2Fparquet/x/",
     HubRef("org/name", "refs/convert/parquet", "x")),
])
def test_a_dataset_uri_parses_into_repo_revision_and_path(uri: str, ref: HubRef) -> None:
    assert parse_dataset_uri(uri) == ref


def test_the_dataset_uri_is_spelled_one_way_without_its_revision() -> None:
    assert dataset_uri(parse_dataset_uri("hf://datasets/org/name@main/data/")) == (
        "hf://datasets/org/name/data")
    assert dataset_uri(parse_dataset_uri("hf://datasets/org/name")) == "hf://datasets/org/name"


@pytest.mark.parametrize(("uri", "message"), [
    ("hf://models/org/name", "--source hf://models/org/name: only dataset repositories are "
     "used on the Hub; expected hf://datasets/OWNER/NAME[@REVISION][/GLOB] (a revision "
     "with / is URL-encoded: @refs%2Fconvert%2Fparquet)"),
    ("hf://datasets/org", "--source hf://datasets/org: expected "
     "hf://datasets/OWNER/NAME[@REVISION][/GLOB]"),
    ("hf://datasets/org/name@", "--source hf://datasets/org/name@: empty revision after @; "
     "expected hf://datasets/OWNER/NAME[@REVISION][/GLOB]"),
    ("hf://datasets/org/na--me", "--source hf://datasets/org/na--me: 'org/na--me' is not a "
     "repository id (letters, digits, -, _ and . between letters or digits, up to 96 each); "
     "expected hf://datasets/OWNER/NAME[@REVISION][/GLOB]"),
    ("hf://datasets/org/name/a/../b", "--source hf://datasets/org/name/a/../b: the path may "
     "not hold . or .. segments"),
])
def test_a_bad_dataset_uri_says_what_to_write(uri: str, message: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_dataset_uri(uri)
    assert str(e.value) == message


@pytest.mark.parametrize("repo", ["-org/name", "org/name-", "org/" + "n" * 97, "org/.name"])
def test_repository_parts_start_and_end_with_a_letter_or_digit_and_stay_short(repo: str) -> None:
    with pytest.raises(UsageError, match="is not a repository id"):
        parse_dataset_uri(f"hf://datasets/{repo}")
    assert parse_dataset_uri(f"hf://datasets/org/{'n' * 96}").repo_id == f"org/{'n' * 96}"


def test_a_tokenizer_spec_parses_and_a_uri_form_is_corrected() -> None:
    assert parse_tokenizer_spec("hf:openai/gpt2@abc") == HubRef("openai/gpt2", "abc")
    assert parse_tokenizer_spec("hf:openai/gpt2") == HubRef("openai/gpt2", None)
    with pytest.raises(UsageError) as e:
        parse_tokenizer_spec("hf://models/openai/gpt2")
    assert str(e.value) == (
        "--tokenizer hf://models/openai/gpt2: a Hub tokenizer is written "
        "hf:OWNER/NAME[@REVISION] (hf://datasets/... is the form for --source); did you mean "
        "--tokenizer hf:openai/gpt2?")
    with pytest.raises(UsageError) as e:
        parse_tokenizer_spec("hf:openai/gpt2/tokenizer.json")
    assert str(e.value) == ("--tokenizer hf:openai/gpt2/tokenizer.json: no path after the "
                            "repository; expected hf:OWNER/NAME[@REVISION]")
    with pytest.raises(UsageError) as e:
        parse_tokenizer_spec("gpt2")
    assert str(e.value) == "--tokenizer gpt2: expected hf:OWNER/NAME[@REVISION]"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    for name in TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return root


def on_disk(root: Path, pattern: str) -> list[str]:
    """The oracle: what glob.glob(recursive=True) gives for ``pattern`` (files only)."""
    return sorted(p for p in glob.glob(pattern, root_dir=root, recursive=True)
                  if (root / p).is_file())


@pytest.mark.parametrize("pattern", [
    "*.parquet", "**/*.parquet", "data/*.parquet", "data/**/*.parquet", "data/**",
    "data/train-?.parquet", "data/[tv]*-0.parquet", "data/[!t]*", "*/*/x.parquet",
    "**/deep/*", "data/e?/**/*.parquet", "data[[]1]/*", "*",
])
def test_a_glob_selects_what_glob_glob_selects(tree: Path, pattern: str) -> None:
    assert select_paths(TREE, pattern) == on_disk(tree, pattern)


def test_no_path_a_file_or_a_directory_select_parquet_files() -> None:
    assert select_paths(TREE, "") == sorted(p for p in TREE if p.endswith(".parquet"))
    assert select_paths(TREE, "data/en/x.parquet") == ["data/en/x.parquet"]
    assert select_paths(TREE, "data/en") == ["data/en/deep/y.parquet", "data/en/x.parquet"]
    assert select_paths(TREE, "dat") == []  # a prefix of a name is not a directory


def test_the_listing_root_is_the_fixed_lead_of_a_glob_or_the_file_s_directory() -> None:
    assert listing_root("data/en/*.parquet") == "data/en"
    assert listing_root("data/**/x/*.parquet") == "data"
    assert listing_root("*.parquet") == ""
    assert listing_root("data/en/x.parquet") == "data/en"
    assert listing_root("data/en") == "data/en"
