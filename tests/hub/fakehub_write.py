"""The write side of the loopback Hub (fakehub.py's docstring says what each endpoint does and
where its behaviour comes from): repository and branch creation, preupload, the LFS batch API
and its uploads, the commit endpoint's NDJSON, paths-info and YAML validation."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

from .fakehub import Repo, git_blob_id

if TYPE_CHECKING:
    from .fakehub import _Handler

LFS_THRESHOLD = 10 * 1024 * 1024  # the Hub stores larger files in LFS whatever they hold
_API = re.compile(
    r"^/api/(datasets|models)/([^/]+)/([^/]+)/(preupload|commit|paths-info|branch)/(.+)$"
)
_BATCH = re.compile(r"^/(?:datasets/)?([^/]+)/([^/]+)\.git/info/lfs/objects/batch$")
_UPLOAD = re.compile(r"^/lfs/([^/]+)/([^/]+)/([0-9a-f]{64})/(\d+)$")
_VERIFY = re.compile(r"^/lfs-verify/([^/]+)/([^/]+)$")


def endpoint_of(path: str) -> str:
    """The kind of a request's path (``commit``, ``preupload``, ``lfs-batch``, ...)."""
    if m := _API.match(path):
        return m[4]
    if _BATCH.match(path):
        return "lfs-batch"
    if _UPLOAD.match(path):
        return "lfs-upload"
    if _VERIFY.match(path):
        return "lfs-verify"
    for word in ("revision", "tree", "resolve", "repos/create", "validate-yaml"):
        if f"/{word}" in path:
            return word
    return path


def _json(h: _Handler, status: int, body: Any) -> None:
    h._send(status, {"Content-Type": "application/json"}, json.dumps(body).encode(), "POST")


def _writable(h: _Handler, kind: str, repo_id: str) -> Repo | None:
    """The repository, when this request may write to it; else the Hub's answer is sent."""
    repo = h.hub.repos.get((kind, repo_id))
    auth = h.headers.get("Authorization")
    token = auth.removeprefix("Bearer ") if auth else None
    if repo is None or (repo.token is not None and token != repo.token
                        and token not in (repo.writers or ())):
        h._error(404 if auth else 401, "RepoNotFound", "Repository not found", "POST")
        return None
    if repo.writers is not None and token not in repo.writers:
        h._error(403 if auth else 401, None,
                 "You don't have the rights to create a commit in this repository", "POST")
        return None
    return repo


def handle_write(h: _Handler, method: str, path: str, body: bytes) -> None:
    path = unquote(path.split("?")[0])
    if path == "/api/validate-yaml":
        _json(h, 200, {"errors": [], "warnings": []})
    elif path == "/api/repos/create":
        _create_repo(h, json.loads(body))
    elif m := _API.match(path):
        kind, repo_id, action, rev = m[1][:-1], f"{m[2]}/{m[3]}", m[4], m[5]
        repo = (_writable(h, kind, repo_id) if action != "paths-info"
                else h._locate(kind, repo_id, rev, "POST")[0])
        if repo is None:
            return
        if action == "preupload":
            _preupload(h, repo, rev, json.loads(body))
        elif action == "commit":
            _commit(h, repo, rev, body)
        elif action == "branch":
            _branch(h, repo, rev)
        else:
            _paths_info(h, repo, rev, parse_qs(body.decode()))
    elif m := _BATCH.match(path):
        repo = _writable(h, "dataset", f"{m[1]}/{m[2]}")
        if repo is not None:
            _batch(h, repo, json.loads(body))
    elif m := _UPLOAD.match(path):
        _upload(h, h.hub.repos[("dataset", f"{m[1]}/{m[2]}")], m[3], int(m[4]), body)
    elif m := _VERIFY.match(path):
        repo = h.hub.repos[("dataset", f"{m[1]}/{m[2]}")]
        oid = json.loads(body)["oid"]
        _json(h, 200 if oid in repo.lfs else 404, {})
    else:
        h._error(404, None, "no such endpoint", method)


def _create_repo(h: _Handler, body: dict[str, Any]) -> None:
    kind = body.get("type") or "model"
    repo_id = f"{body.get('organization')}/{body['name']}"
    if not h.headers.get("Authorization"):
        h._error(401, None, "Invalid username or password.", "POST")
        return
    if (kind, repo_id) in h.hub.repos:
        h._error(409, None, "You already created this dataset repo", "POST")
        return
    h.hub.commit(kind, repo_id, {".gitattributes": b"*.bin filter=lfs diff=lfs merge=lfs -text\n"},
                 git_files=(".gitattributes",))
    _json(h, 200, {"url": f"{h.hub.url}/datasets/{repo_id}", "name": repo_id})


def _branch(h: _Handler, repo: Repo, branch: str) -> None:
    if branch in repo.refs:
        h._error(409, None, "Reference already exists", "POST")
        return
    repo.refs[branch] = repo.refs["main"]
    _json(h, 200, {})


def _head(h: _Handler, repo: Repo, rev: str) -> str | None:
    sha = repo.resolve(rev)
    if sha is None:
        h._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", "POST")
    return sha


def _oid(repo: Repo, path: str, data: bytes) -> str:
    return git_blob_id(data) if path in repo.git_files else hashlib.sha256(data).hexdigest()


def _preupload(h: _Handler, repo: Repo, rev: str, body: dict[str, Any]) -> None:
    sha = _head(h, repo, rev)
    if sha is None:
        return
    files = repo.commits[sha]
    out = []
    for f in body["files"]:
        sample = base64.b64decode(f["sample"])
        try:
            text = b"\0" not in sample.decode("utf-8").encode()
        except UnicodeDecodeError:
            text = False
        mode = "regular" if text and f["size"] < LFS_THRESHOLD else "lfs"
        known = files.get(f["path"])
        out.append({"path": f["path"], "uploadMode": mode, "shouldIgnore": False,
                    "oid": None if known is None else _oid(repo, f["path"], known)})
    _json(h, 200, {"files": out, "commitOid": sha})


def _batch(h: _Handler, repo: Repo, body: dict[str, Any]) -> None:
    objects = []
    for o in body["objects"]:
        oid, size = o["oid"], int(o["size"])
        entry: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
        if oid not in repo.lfs:
            owner, name = repo.repo_id.split("/")
            entry["actions"] = {
                "upload": {"href": f"{h.hub.url}/lfs/{owner}/{name}/{oid}/{size}"},
                "verify": {"href": f"{h.hub.url}/lfs-verify/{owner}/{name}"},
            }
        objects.append(entry)
    _json(h, 200, {"transfer": "basic", "objects": objects})


def _upload(h: _Handler, repo: Repo, oid: str, size: int, body: bytes) -> None:
    if len(body) != size or hashlib.sha256(body).hexdigest() != oid:
        h._error(400, None, f"the object is not {oid} of {size} bytes", "PUT")
        return
    repo.lfs[oid] = body
    h._send(200, {}, b"", "PUT")


def _commit(h: _Handler, repo: Repo, rev: str, body: bytes) -> None:
    lines = [json.loads(x) for x in body.splitlines() if x.strip()]
    header = lines[0]["value"]
    held = h.hub.held
    if held is not None and any(held[0] in line["value"].get("path", "") for line in lines[1:]):
        h.hub.held = None
        held[1].set()
        held[2].wait(timeout=60)
        return  # dropped: the client is gone
    with h.hub._lock:
        sha = _head(h, repo, rev)
        if sha is None:
            return
        parent = header.get("parentCommit")
        if parent is not None and not sha.startswith(parent):
            h._error(412, None, "A commit has happened since. Please refresh and try again.",
                     "POST")
            return
        files = dict(repo.commits[sha])
        git, lfs = set(), set()
        for line in lines[1:]:
            key, v = line["key"], line["value"]
            if key == "file":
                files[v["path"]] = base64.b64decode(v["content"])
                git.add(v["path"])
            elif key == "lfsFile":
                if v["oid"] not in repo.lfs:
                    h._error(422, None, f"LFS object {v['oid']} was never uploaded", "POST")
                    return
                files[v["path"]] = repo.lfs[v["oid"]]
                lfs.add(v["path"])
            elif key == "deletedFile":
                if files.pop(v["path"], None) is None:
                    h._error(404, "EntryNotFound", "A file with this name doesn't exist", "POST")
                    return
            elif key == "deletedFolder":
                head = v["path"].rstrip("/") + "/"
                files = {p: d for p, d in files.items() if not p.startswith(head)}
        new = _store(repo, rev, sha, files, git, lfs)
        repo.written += 1
        for repo_id, after, extra in list(h.hub.interjections):
            if repo_id == repo.repo_id and after == repo.written:
                h.hub.interjections.remove((repo_id, after, extra))
                _store(repo, rev, new, {**files, **extra}, set(extra), set())
    _json(h, 200, {"commitUrl": f"{h.hub.url}/datasets/{repo.repo_id}/commit/{new}",
                   "commitOid": new, "pullRequestUrl": None})


def _store(repo: Repo, ref: str, parent: str, files: dict[str, bytes], git: set[str],
           lfs: set[str]) -> str:
    h = hashlib.sha1(f"{repo.repo_id}#{len(repo.commits)}#{parent}".encode())
    for p in sorted(files):
        h.update(p.encode() + b"\0" + hashlib.sha256(files[p]).digest())
    new = h.hexdigest()
    repo.git_files = (repo.git_files | git) - lfs
    repo.commits[new] = files
    repo.parents[new] = parent
    repo.refs[ref] = new
    return new


def _paths_info(h: _Handler, repo: Repo, rev: str, form: dict[str, list[str]]) -> None:
    sha = _head(h, repo, rev)
    if sha is None:
        return
    files = repo.commits[sha]
    out = [h._entry(repo, p, files[p]) for p in form.get("paths", []) if p in files]
    _json(h, 200, out)
