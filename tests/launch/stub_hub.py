"""A small Hugging Face-style hub on loopback: the endpoints `huggingface_hub.snapshot_download`
uses.

``/api/models/REPO/revision/REV`` (a ref resolved to its commit), ``/api/models/REPO/tree/REV``
(the file listing with sizes, git blob ids and LFS sha256), and HEAD/GET
``/REPO/resolve/REV/FILE`` with the hub's headers (``X-Repo-Commit``, ``ETag``). A gated
repository answers 401 with ``X-Error-Code: GatedRepo`` unless the request carries the token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote

from tests.launch.stub_http import json_body, serve

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")


def git_blob_id(data: bytes) -> str:
    """The git object id of a file's content (what the hub lists as ``oid`` for a file kept in
    git)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class StubRepo:
    """One repository at one commit: its files, whether it is gated, and the token that opens it."""

    def __init__(
        self,
        repo: str,
        commit: str,
        files: dict[str, bytes],
        *,
        gated: bool = False,
        token: str | None = None,
        lie_about: str | None = None,
    ):
        self.repo, self.commit, self.files = repo, commit, files
        self.gated, self.token, self.lie_about = gated, token, lie_about
        self.requests: list[str] = []

    def entry(self, name: str) -> dict:
        data = self.files[name]
        item = {"type": "file", "path": name, "size": len(data), "oid": git_blob_id(data)}
        if name.endswith(LFS_SUFFIXES):
            sha = "0" * 64 if name == self.lie_about else hashlib.sha256(data).hexdigest()
            item["lfs"] = {"oid": sha, "size": len(data), "pointerSize": 134}
        return item

    def handle(self, request) -> tuple[int, dict[str, str], bytes]:
        path = unquote(request.path.split("?", 1)[0])
        self.requests.append(f"{request.command} {path}")
        if self.gated and request.headers.get("Authorization") != f"Bearer {self.token}":
            return (
                401,
                {
                    "X-Error-Code": "GatedRepo",
                    "X-Error-Message": "Access to this model is restricted.",
                },
                json_body({"error": "Access to this model is restricted."}),
            )
        api = f"/api/models/{self.repo}/"
        if path.startswith(api + "revision/"):
            return (
                200,
                {},
                json_body(
                    {
                        "id": self.repo,
                        "sha": self.commit,
                        "siblings": [{"rfilename": n} for n in self.files],
                    }
                ),
            )
        if path.startswith(api + "tree/"):
            return 200, {}, json_body([self.entry(n) for n in self.files])
        resolve = f"/{self.repo}/resolve/"
        if path.startswith(resolve):
            name = path[len(resolve) :].split("/", 1)[1]
            if name not in self.files:
                return 404, {"X-Error-Code": "EntryNotFound"}, b"not found"
            entry = self.entry(name)
            etag = entry["lfs"]["oid"] if "lfs" in entry else entry["oid"]
            headers = {"X-Repo-Commit": self.commit, "ETag": f'"{etag}"'}
            return 200, headers, self.files[name]
        return 404, {"X-Error-Code": "RepoNotFound"}, json_body({"error": "Repository not found"})


@contextmanager
def stub_hub(repo: StubRepo) -> Iterator[str]:
    """Serve ``repo``; yields the endpoint to set as HF_ENDPOINT."""
    with serve(repo.handle) as url:
        yield url
