"""A Hub dataset repository as one writer or reader sees it: the client, every call through
:func:`prep.hub.calls.call_hub` (retries, then exit 75; a refused write says how to fix the
token), the branch head, the commit a writer builds on (``parent``) or a reader is pinned to
(``pinned``), and the repository and branch made to exist before a first commit."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from huggingface_hub import HfApi
from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError
from huggingface_hub.utils.tqdm import disable_progress_bars

from prep.errors import InputError, OutputError
from prep.hub.calls import HubCall, HubOptions, call_hub
from prep.hub.offline import CachedCommit, open_commit, remember_ref

logger = logging.getLogger(__name__)

T = TypeVar("T")


def git_blob_id(data: bytes) -> str:
    """The git object id of a file stored in git (what the Hub lists as its ``oid``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's id, not security


class HubRepo:
    """The repository ``repo_id`` on the Hub, at branch ``revision`` (a writer) or pinned to
    ``revision`` (a reader: resolved to its commit once, and every read is at that commit,
    through the Hugging Face cache; offline, the cache's)."""

    def __init__(self, repo_id: str, revision: str, *, writer: bool, token: str | None,
                 options: HubOptions) -> None:
        self.repo_id, self.revision, self.writer = repo_id, revision, writer
        self.token, self.options = token, options
        self.root = f"datasets/{repo_id}"
        self.api = HfApi(endpoint=options.endpoint, token=token)
        disable_progress_bars()  # prep logs one line per upload; no bar per file
        self.stopping = threading.Event()
        self.repo_url = f"hf://datasets/{repo_id}"
        self.parent: str | None = None  # the commit the next one builds on (a writer)
        self.pinned: str | None = None  # the commit every read is at (a reader)
        self.exists: bool | None = None  # the repository (None: not asked yet)
        self.cached: CachedCommit | None = None  # a reader offline: the cache's commit

    def uri(self, fs_path: str) -> str:
        at = "" if self.revision == "main" else f"@{self.revision}"
        return f"hf://datasets/{self.repo_id}{at}/{self.in_repo(fs_path)}".rstrip("/")

    def in_repo(self, fs_path: str) -> str:
        """``datasets/OWNER/NAME/a/b`` -> ``a/b``."""
        return fs_path[len(self.root):].strip("/")

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` through :func:`call_hub`; a writer's refused token (401/403) is an
        ``OutputError`` saying how to get write access."""
        return call_hub(HubCall(what, self.repo_url, self.token, self.options,
                                writing=self.writer), fn)

    # -- the branch head ------------------------------------------------------------------------

    def head(self) -> str | None:
        """The commit the branch (a reader: the revision) points to now; None when the
        repository or the branch does not exist (``exists`` says which)."""

        def ask() -> str | None:
            try:
                info = self.api.repo_info(self.repo_id, repo_type="dataset",
                                          revision=self.revision, token=self.token)
            except RepositoryNotFoundError:
                self.exists = False
                return None
            except RevisionNotFoundError:
                self.exists = True
                return None
            self.exists = True
            return info.sha

        return self.call(f"looking up {self.repo_url}@{self.revision}", ask)

    def at(self) -> str | None:
        """The commit to read: a reader's pinned one; a writer's parent, the branch head it
        first saw, then its own last commit (what another writer commits meanwhile is not
        read: the next commit, named on that parent, is refused instead)."""
        if not self.writer:
            if self.pinned is None and self.options.offline:
                self.cached = open_commit(self.repo_id, "dataset", self.revision, self.options,
                                          self.uri(self.root))
                self.pinned = self.cached.commit
            if self.pinned is None:
                self.pinned = self.head()
                if self.pinned is not None:
                    remember_ref(self.repo_id, "dataset", self.revision, self.pinned,
                                 self.options)
                if self.pinned is None:
                    raise self._unreadable()
            return self.pinned
        if self.parent is None:
            self.parent = self.head()
        return self.parent

    def _unreadable(self) -> InputError:
        where = f"{self.repo_url}@{self.revision}"
        if self.exists:
            return InputError(f"{where}: no such revision on the Hub; give an existing branch, "
                              "tag or commit after @", path=self.repo_url)
        auth = ("the token given may not read it: pass one that can with --token or HF_TOKEN"
                if self.token else "if it is private or gated, pass a token with --token or "
                "set HF_TOKEN")
        return InputError(f"{where}: the Hub has no dataset repository {self.repo_id} that "
                          f"this request may read; check OWNER/NAME, and {auth}",
                          path=self.repo_url)

    def ensure_repo(self, create: bool) -> None:
        """Before the first commit: the repository exists (or is created, with ``create``),
        and so does the branch (created from the default branch's head)."""
        head = self.head()
        if self.exists is False:
            if not create:
                raise missing_repo(self.repo_url)
            self.call(f"creating {self.repo_url}", lambda: self.api.create_repo(
                self.repo_id, repo_type="dataset", token=self.token, exist_ok=True))
            logger.info("created the dataset repository %s", self.repo_url)
            head = self.head()
            self.parent = None
        if head is None:
            self.call(f"creating branch {self.revision} of {self.repo_url}",
                      lambda: self.api.create_branch(self.repo_id, branch=self.revision,
                                                     repo_type="dataset", token=self.token,
                                                     exist_ok=True))
            logger.info("created branch %s of %s", self.revision, self.repo_url)
            head = self.head()
            self.parent = None
        if self.parent is None:
            self.parent = head


def missing_repo(repo_url: str) -> OutputError:
    """The refusal of a ``--out`` whose repository does not exist (or this token cannot
    see it)."""
    repo_id = repo_url.removeprefix("hf://datasets/")
    return OutputError(
        f"--out {repo_url}: the Hub has no dataset repository {repo_id} that this token can "
        f"see; nothing was written. Create it with --create-repo (or `hf repo create "
        f"{repo_id} --repo-type dataset`), or check OWNER/NAME and that HF_TOKEN (--token) "
        "belongs to an account that can write to it",
        path=repo_url,
    )

