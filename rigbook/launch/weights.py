"""Fetch model weights at a pinned revision from a Hugging Face-style hub into the models directory.

Each file streams into ``NAME.part`` and is renamed when complete; an interrupted
download resumes from the ``.part`` with an HTTP Range request. Where the hub
gives a file's sha256 (LFS files), the finished file is checked against it. A
file already in place with the right size (and sha256, when known) is kept; one
that differs is never overwritten without asking.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from rigbook.errors import EnvironmentProblem, FetchError, InputError
from rigbook.launch.plan import Download

DEFAULT_ENDPOINT = "https://huggingface.co"
CHUNK = 1 << 20


class RemoteFile(BaseModel):
    """One file of a repository at a revision."""

    path: str
    size: int | None = None
    sha256: str | None = None


def hub_endpoint() -> str:
    """The hub to fetch from: ``HF_ENDPOINT`` (a mirror) or huggingface.co."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def free_bytes(path: Path) -> int:
    """Free space on the disk that holds ``path`` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def file_url(repo: str, revision: str, path: str, endpoint: str | None = None) -> str:
    """``{hub}/{repo}/resolve/{revision}/{path}``."""
    return f"{endpoint or hub_endpoint()}/{repo}/resolve/{quote(revision, safe='')}/{quote(path)}"


def list_files(client: httpx.Client, repo: str, revision: str, endpoint: str | None = None) -> list[RemoteFile]:
    """The files of ``repo`` at ``revision``, with sizes and LFS sha256 where the hub gives them."""
    url = f"{endpoint or hub_endpoint()}/api/models/{repo}/revision/{quote(revision, safe='')}"
    try:
        response = client.get(url, params={"blobs": "true"})
    except httpx.HTTPError as exc:
        raise FetchError("E_FETCH", f"could not list {repo}@{revision}: {exc}") from None
    if response.status_code >= 400:
        raise FetchError("E_FETCH", f"{url} answered HTTP {response.status_code}")
    files = []
    for sibling in response.json().get("siblings") or []:
        lfs = sibling.get("lfs") or {}
        files.append(RemoteFile(path=sibling["rfilename"], size=lfs.get("size") or sibling.get("size"),
                                sha256=lfs.get("sha256")))
    return files


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _matches(path: Path, remote: RemoteFile) -> bool:
    if remote.size is not None and path.stat().st_size != remote.size:
        return False
    return remote.sha256 is None or _sha256(path) == remote.sha256


def fetch_file(client: httpx.Client, url: str, dest: Path, remote: RemoteFile,
               progress: Callable[[str, int], None] | None = None) -> Path:
    """Stream ``url`` into ``dest`` through ``dest.part``, resuming a partial file; check size and sha256."""
    if dest.exists():
        if _matches(dest, remote):
            return dest
        raise InputError("E_CONFIRM", f"{dest} exists and differs from {remote.path} at the pinned revision; not overwriting it",
                          remedy="Move or delete the file yourself, then run again.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with client.stream("GET", url, headers=headers) as response:
            if response.status_code == 416 and have:
                pass  # the .part is already whole
            elif response.status_code >= 400:
                raise FetchError("E_FETCH", f"{url} answered HTTP {response.status_code}")
            else:
                # 206: the server resumes; 200: it ignored the range, so start over.
                mode = "ab" if response.status_code == 206 else "wb"
                with part.open(mode) as handle:
                    for block in response.iter_bytes(CHUNK):
                        handle.write(block)
                        if progress:
                            progress(remote.path, len(block))
    except httpx.HTTPError as exc:
        raise FetchError("E_FETCH", f"download of {url} stopped: {exc}; run again to resume") from None
    if not _matches(part, remote):
        got = part.stat().st_size
        part.unlink()
        raise FetchError("E_FETCH", f"{remote.path}: the download does not match the hub's size/sha256 (got {got} bytes); "
                         "the partial file was removed, run again")
    part.rename(dest)
    return dest


def fetch_weights(download: Download, *, endpoint: str | None = None,
                  progress: Callable[[str, int], None] | None = None) -> list[Path]:
    """Fetch every file of ``download`` (or those it names) into its destination, after a free-space check."""
    with httpx.Client(timeout=httpx.Timeout(30.0, read=120.0), follow_redirects=True) as client:
        remote = list_files(client, download.repo, download.revision, endpoint)
        if download.files:
            remote = [f for f in remote if f.path in set(download.files)]
        for f in remote:
            # The listing is untrusted too: no file may land outside the destination.
            if f.path.startswith("/") or ".." in Path(f.path).parts:
                raise FetchError("E_FETCH", f"{download.repo} lists a file outside its folder: {f.path!r}")
        need = sum(f.size or 0 for f in remote if not (download.dest / f.path).exists())
        free = free_bytes(download.dest)
        if need > free:
            raise EnvironmentProblem("E_DISK", f"{download.repo}@{download.revision} needs {need / 1e9:.2f} GB; "
                                     f"{free / 1e9:.2f} GB free at {download.dest}")
        return [fetch_file(client, file_url(download.repo, download.revision, f.path, endpoint),
                           download.dest / f.path, f, progress) for f in remote]
