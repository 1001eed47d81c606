"""A loopback Hugging Face Hub: the endpoints ``huggingface_hub`` calls to read a repository
and to write one (without Xet: ``HF_HUB_DISABLE_XET=1``).

Served by ``http.server`` in a thread on 127.0.0.1 (ephemeral port), so the real client runs
end to end with ``HF_ENDPOINT`` pointing here. Reading:

- ``GET /api/{datasets|models}/OWNER/NAME/revision/REV`` -> ``{"id", "sha", "siblings"}``
- ``GET /api/{datasets|models}/OWNER/NAME/tree/REV[/PATH]?recursive=&expand=`` -> entries
  with ``lfs: {oid, size, pointerSize}`` for LFS files and a folder's ``oid`` that changes
  exactly when something below it does (git's tree id), paginated by ``Link: rel="next"``
- ``HEAD|GET /datasets/OWNER/NAME/resolve/REV/PATH`` (models: ``/OWNER/NAME/resolve/...``)
  with ``X-Repo-Commit``, ``ETag`` (LFS SHA-256 or git blob id), ``X-Linked-Etag`` /
  ``X-Linked-Size`` for LFS files and ``Content-Length``; ``Range: bytes=N-`` is honoured.
- ``POST /api/datasets/OWNER/NAME/paths-info/REV`` (form: ``paths``, ``expand``) -> the
  entries of those paths that exist (``HfApi.get_paths_info``).

Writing, as huggingface_hub's ``hf_api.py`` (``create_repo``, ``create_branch``,
``preupload_lfs_files``, ``create_commit``, ``_validate_yaml``), ``_commit_api.py``
(``_fetch_upload_modes``, ``_upload_files``, ``_prepare_commit_payload``, ``_send_commit``) and
``lfs.py`` (``post_lfs_batch_info``, ``lfs_upload``) call it, and as the Hub documents it
(the git LFS batch API; the commit endpoint's NDJSON, huggingface_hub issue #1085):

- ``POST /api/repos/create`` (``{name, organization, type, private}``) -> 200, or 409 when
  it exists; a new repository has one commit holding ``.gitattributes``, as on the Hub;
- ``POST /api/datasets/OWNER/NAME/branch/BRANCH`` -> a branch at the default branch's head;
- ``POST /api/datasets/OWNER/NAME/preupload/REV`` (``{files: [{path, sample, size}]}``) ->
  ``{files: [{path, uploadMode, shouldIgnore, oid}]}``: ``lfs`` for a file over 10 MB or whose
  first bytes (the base64 ``sample``) are not UTF-8 text (the Hub's rule for files no
  ``.gitattributes`` names), else ``regular``; ``oid`` is the file's id at REV (its LFS
  SHA-256, or git blob id), which the client compares to skip unchanged files;
- ``POST /datasets/OWNER/NAME.git/info/lfs/objects/batch`` (``{operation: upload, objects:
  [{oid, size}]}``) -> per object either no ``actions`` (the repository's storage holds it:
  the client does not upload it) or ``actions: {upload: {href}, verify: {href}}``;
- ``PUT /lfs/OWNER/NAME/OID`` (the upload href): the body is stored only when its SHA-256
  is OID and its size the size asked for (else 400); ``POST /lfs-verify/...``: 404 when the
  object is not stored;
- ``POST /api/datasets/OWNER/NAME/commit/REV`` (NDJSON: a ``header`` line ``{summary,
  description, parentCommit?}``, then ``file`` (base64 content, stored in git), ``lfsFile``
  (``{path, algo, oid, size}``: the object must be stored, else 422), ``deletedFile`` and
  ``deletedFolder`` lines) -> ``{commitUrl, commitOid, pullRequestUrl}``; 412 when
  ``parentCommit`` is not REV's head (the Hub's answer to a stale parent); a file deleted
  that does not exist -> 404;
- ``POST /api/validate-yaml`` -> no errors.

Commits are kept whole (each commit's files, path -> bytes), with their parent; LFS objects
by SHA-256 per repository, as the Hub keeps them: a commit can name an object uploaded before
(by an earlier commit, or never committed). Access: a private repository is read only with
its token (``token``); with ``writers`` set, a write needs one of those tokens (else 403,
and 401 without any), as the Hub answers a token without write access.

Errors carry ``X-Error-Code`` as the Hub's do (``RepoNotFound``, ``RevisionNotFound``,
``EntryNotFound``). No ``X-Xet-*`` header is ever sent, so transfers are plain HTTP.

For tests: branches move (``commit`` on an existing ref), requests can fail (``fail``: a
status, with ``Retry-After`` when given, or a dropped connection, K times or forever), a file
can be served corrupted (``corrupt``), a download can be held until the test releases it
(``gate``), another writer's commit can land on a branch right after the client's N-th
commit (``interject``), and every request is logged (``requests``, ``counts``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

FOREVER = -1
RESET = "reset"
LOST = "lost"  # the request is carried out, then the connection closes without an answer


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tree_id(files: dict[str, bytes], folder: str) -> str:
    """A folder's id, as git's tree id: it changes exactly when a file below it does (its
    path or bytes), whatever else the commit changes."""
    h = hashlib.sha1(folder.encode())
    head = f"{folder}/"
    for p in sorted(p for p in files if p.startswith(head)):
        h.update(p.encode() + b"\0" + hashlib.sha256(files[p]).digest())
    return h.hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    sha = hashlib.sha256(data).hexdigest()
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n"
    ).encode()


@dataclass
class Repo:
    kind: str  # "dataset" or "model"
    repo_id: str
    refs: dict[str, str] = field(default_factory=dict)
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    git_files: set[str] = field(default_factory=set)  # stored in git, not LFS
    token: str | None = None  # private: only this bearer token may read
    writers: set[str] | None = None  # None: any token may write; else only these
    parents: dict[str, str | None] = field(default_factory=dict)
    lfs: dict[str, bytes] = field(default_factory=dict)  # uploaded LFS objects by SHA-256
    written: int = 0  # commits made through the commit endpoint

    def resolve(self, rev: str) -> str | None:
        if rev in self.refs:
            return self.refs[rev]
        return rev if rev in self.commits else None


@dataclass
class Request:
    method: str
    path: str  # percent-decoded
    query: str
    auth: str | None


@dataclass
class Fault:
    method: str | None
    contains: str
    action: int | str  # an HTTP status, RESET (close without answering) or LOST
    remaining: int
    retry_after: int | None = None


class FakeHub:
    """The server and its state; ``url`` is the endpoint to give ``HF_ENDPOINT``."""

    def __init__(self, page_size: int = 3) -> None:
        self.repos: dict[tuple[str, str], Repo] = {}
        self.page_size = page_size
        self.faults: list[Fault] = []
        self.corrupted: set[tuple[str, str]] = set()  # (commit, path)
        self.gates: dict[str, threading.Event] = {}
        self.interjections: list[tuple[str, int, dict[str, bytes]]] = []
        self.held: tuple[str, threading.Event, threading.Event] | None = None
        self.holds: dict[str, tuple[str, threading.Event, threading.Event]] = {}
        self._log: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.hub = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        for gate in self.gates.values():
            gate.set()
        for _, _, release in self.holds.values():
            release.set()
        if self.held is not None:
            self.held[2].set()
        self._server.shutdown()
        self._server.server_close()

    # -- state ----------------------------------------------------------------------------

    def commit(
        self,
        kind: str,
        repo_id: str,
        files: dict[str, bytes],
        *,
        ref: str = "main",
        git_files: tuple[str, ...] = (),
        token: str | None = None,
    ) -> str:
        """Create a commit holding exactly ``files`` and point ``ref`` at it; returns its SHA."""
        with self._lock:
            repo = self.repos.setdefault((kind, repo_id), Repo(kind, repo_id))
            repo.git_files.update(git_files)
            if token is not None:
                repo.token = token
            h = hashlib.sha1(f"{kind}/{repo_id}#{len(repo.commits)}".encode())
            for path in sorted(files):
                h.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
            sha = h.hexdigest()
            repo.commits[sha] = dict(files)
            repo.parents[sha] = repo.refs.get(ref)
            repo.refs[ref] = sha
            return sha

    def head_files(
        self, repo_id: str, ref: str = "main", kind: str = "dataset"
    ) -> dict[str, bytes]:
        """The files at ``ref``'s head."""
        repo = self.repos[(kind, repo_id)]
        return dict(repo.commits[repo.refs[ref]])

    def history(self, repo_id: str, ref: str = "main", kind: str = "dataset") -> list[str]:
        """``ref``'s commits, oldest first."""
        repo = self.repos[(kind, repo_id)]
        out: list[str] = []
        cur: str | None = repo.refs[ref]
        while cur is not None:
            out.append(cur)
            cur = repo.parents.get(cur)
        return out[::-1]

    def interject(self, repo_id: str, after: int, files: dict[str, bytes]) -> None:
        """Right after the client's ``after``-th commit to ``repo_id`` (counting from now),
        another writer commits ``files`` (added to the head's) on the same branch."""
        repo = self.repos[("dataset", repo_id)]
        self.interjections.append((repo_id, repo.written + after, files))

    def counts(self) -> dict[str, int]:
        """Requests by endpoint (the method and the kind of path), for request budgets."""
        out: dict[str, int] = {}
        for r in self.requests():
            key = f"{r.method} {endpoint_of(r.path)}"
            out[key] = out.get(key, 0) + 1
        return out

    def fail(
        self, contains: str, action: int | str = 503, times: int = 1, method: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        """The next ``times`` requests whose decoded path contains ``contains`` (and of
        ``method`` if given) get ``action``: a status (with ``Retry-After: retry_after`` when
        given), RESET or LOST; ``FOREVER`` never stops."""
        with self._lock:
            self.faults.append(Fault(method, contains, action, times, retry_after))

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def corrupt(self, commit: str, path: str) -> None:
        """Serve ``path`` at ``commit`` with one byte flipped (same length)."""
        self.corrupted.add((commit, path))

    def hold(self, contains: str, method: str) -> tuple[threading.Event, threading.Event]:
        """Hold the next ``method`` request whose path contains ``contains``: returns
        (arrived, release); once released it is dropped unanswered, never carried out."""
        arrived, release = threading.Event(), threading.Event()
        self.holds[contains] = (method, arrived, release)
        return arrived, release

    def hold_commit(self, path_contains: str) -> tuple[threading.Event, threading.Event]:
        """Hold the next commit that adds a path containing ``path_contains``: returns
        (arrived, release). Once released, the held commit is dropped unanswered (its client
        was killed meanwhile), never carried out."""
        arrived, release = threading.Event(), threading.Event()
        self.held = (path_contains, arrived, release)
        return arrived, release

    def gate(self, contains: str) -> threading.Event:
        """Hold GET downloads whose path contains ``contains`` until the event is set."""
        ev = threading.Event()
        self.gates[contains] = ev
        return ev

    def requests(self, method: str | None = None, contains: str = "") -> list[Request]:
        with self._lock:
            return [
                r
                for r in self._log
                if (method is None or r.method == method) and contains in r.path
            ]

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    def _record(self, req: Request) -> Fault | None:
        with self._lock:
            self._log.append(req)
            for f in self.faults:
                if f.remaining != 0 and f.contains in req.path and f.method in (None, req.method):
                    if f.remaining > 0:
                        f.remaining -= 1
                    return f
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server_version = "FakeHub/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().strip().split(b";")[0], 16)
                if n == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # -- plumbing -------------------------------------------------------------------------

    @property
    def hub(self) -> FakeHub:
        return self.server.hub  # type: ignore[attr-defined, no-any-return]

    def _send(
        self, status: int, headers: dict[str, str], body: bytes = b"", method: str = "GET"
    ) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", headers.get("Content-Length", str(len(body))))
        self.end_headers()
        if method != "HEAD" and body:
            self.wfile.write(body)

    def _error(
        self,
        status: int,
        code: str | None,
        message: str,
        method: str,
        extra: dict[str, str] | None = None,
    ) -> None:
        headers = {"Content-Type": "application/json", **(extra or {})}
        if code:
            headers["X-Error-Code"] = code
        headers["X-Error-Message"] = message
        self._send(status, headers, json.dumps({"error": message}).encode(), method)

    def _handle(self, method: str) -> None:
        raw = urlsplit(self.path)
        hub = self.hub
        fault = hub._record(
            Request(method, unquote(raw.path), raw.query, self.headers.get("Authorization"))
        )
        for contains, (want, arrived, release) in list(hub.holds.items()):
            if contains in unquote(raw.path) and want == method:
                del hub.holds[contains]
                arrived.set()
                release.wait(timeout=60)
                self.close_connection = True
                return  # dropped unanswered: its client is gone
        if fault is not None and fault.action == LOST and method in ("POST", "PUT"):
            answer, self.wfile = self.wfile, io.BytesIO()
            handle_write(self, method, raw.path, self._body())
            self.wfile = answer
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None:
            if fault.action == RESET:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            extra = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
            if method in ("POST", "PUT"):
                self._body()
            self._error(int(fault.action), None, "injected failure", method, extra)
            return
        if method in ("POST", "PUT"):
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                handle_write(self, method, raw.path, self._body())
            return
        segs = raw.path.split("/")[1:]
        if segs[0] == "api" and len(segs) == 4:  # repo info without a revision: main
            segs += ["revision", "main"]
        try:
            if segs[0] == "api" and len(segs) >= 6 and segs[1] in ("datasets", "models"):
                kind = segs[1][:-1]
                repo_id = f"{unquote(segs[2])}/{unquote(segs[3])}"
                action, rev = segs[4], unquote(segs[5])
                rest = unquote("/".join(segs[6:]))
                repo, sha = self._locate(kind, repo_id, rev, method)
                if repo is None or sha is None:
                    return
                if action == "revision":
                    self._revision(repo, sha, method)
                elif action == "tree":
                    self._tree(repo, sha, rest, parse_qs(raw.query), raw.path, method)
                else:
                    self._error(404, None, "no such endpoint", method)
                return
            if segs[0] == "datasets" and len(segs) >= 6 and segs[3] == "resolve":
                kind, repo_id, rev, path = "dataset", f"{segs[1]}/{segs[2]}", segs[4], segs[5:]
            elif len(segs) >= 5 and segs[2] == "resolve":
                kind, repo_id, rev, path = "model", f"{segs[0]}/{segs[1]}", segs[3], segs[4:]
            else:
                self._error(404, None, "no such endpoint", method)
                return
            repo, sha = self._locate(kind, unquote(repo_id), unquote(rev), method)
            if repo is not None and sha is not None:
                self._resolve(repo, sha, unquote("/".join(path)), method)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _locate(
        self, kind: str, repo_id: str, rev: str, method: str
    ) -> tuple[Repo | None, str | None]:
        repo = self.hub.repos.get((kind, repo_id))
        auth = self.headers.get("Authorization")
        if repo is None or (repo.token is not None and auth != f"Bearer {repo.token}"):
            if auth and repo is not None:
                self._error(401, None, "Invalid credentials in Authorization header", method)
            else:  # the Hub answers 401 to anonymous requests for missing or private repos
                self._error(
                    401 if not auth else 404, "RepoNotFound", "Repository not found", method
                )
            return None, None
        sha = repo.resolve(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", method)
            return repo, None
        return repo, sha

    # -- endpoints ------------------------------------------------------------------------

    def _revision(self, repo: Repo, sha: str, method: str) -> None:
        files = repo.commits[sha]
        body = {
            "id": repo.repo_id,
            "sha": sha,
            "private": repo.token is not None,
            "siblings": [{"rfilename": p} for p in sorted(files)],
        }
        self._send(200, {"Content-Type": "application/json"}, json.dumps(body).encode(), method)

    def _entry(self, repo: Repo, path: str, data: bytes) -> dict[str, Any]:
        if path in repo.git_files:
            return {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": path}
        pointer = lfs_pointer(data)
        return {
            "type": "file",
            "oid": git_blob_id(pointer),
            "size": len(data),
            "path": path,
            "lfs": {
                "oid": hashlib.sha256(data).hexdigest(),
                "size": len(data),
                "pointerSize": len(pointer),
            },
        }

    def _tree(
        self,
        repo: Repo,
        sha: str,
        under: str,
        query: dict[str, list[str]],
        raw_path: str,
        method: str,
    ) -> None:
        files = repo.commits[sha]
        recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
        prefix = f"{under}/" if under else ""
        below = sorted(p for p in files if p.startswith(prefix))
        if under and not below:
            self._error(
                404, "EntryNotFound", f"{under} does not exist", method, {"X-Repo-Commit": sha}
            )
            return
        entries: list[dict[str, Any]] = []
        dirs: set[str] = set()
        for p in below:
            rel = p[len(prefix) :].split("/")
            for depth in range(1, len(rel)):
                d = prefix + "/".join(rel[:depth])
                if (recursive or depth == 1) and d not in dirs:
                    dirs.add(d)
                    entries.append(
                        {"type": "directory", "oid": tree_id(files, d), "size": 0, "path": d}
                    )
            if recursive or len(rel) == 1:
                entries.append(self._entry(repo, p, files[p]))
        start = int(query.get("cursor", ["0"])[0])
        page = entries[start : start + self.hub.page_size]
        headers = {"Content-Type": "application/json"}
        if start + self.hub.page_size < len(entries):
            nxt = (
                f"{self.hub.url}{raw_path}?recursive={str(recursive).lower()}"
                f"&expand=false&cursor={start + self.hub.page_size}"
            )
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._send(200, headers, json.dumps(page).encode(), method)

    def _resolve(self, repo: Repo, sha: str, path: str, method: str) -> None:
        files = repo.commits[sha]
        if path not in files:
            self._error(
                404, "EntryNotFound", f"{path} does not exist", method, {"X-Repo-Commit": sha}
            )
            return
        data = files[path]
        lfs = path not in repo.git_files
        etag = hashlib.sha256(data).hexdigest() if lfs else git_blob_id(data)
        if (sha, path) in self.hub.corrupted:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if lfs:
            headers["X-Linked-Etag"] = f'"{etag}"'
            headers["X-Linked-Size"] = str(len(data))
        if method == "GET":
            for contains, gate in list(self.hub.gates.items()):
                if contains in path:
                    gate.wait(timeout=60)
        status = 200
        rng = self.headers.get("Range", "")
        if method == "GET" and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes=") : -1])
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            data, status = data[start:], 206
        headers["Content-Length"] = str(len(data))
        self._send(status, headers, data, method)


from .fakehub_write import endpoint_of, handle_write  # noqa: E402 - the write side uses Repo
