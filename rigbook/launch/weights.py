"""Fetch model weights at a pinned revision through ``huggingface_hub``.

``snapshot_download`` does the transfer: your token (``HF_TOKEN`` or ``hf auth
login``) is sent, ``HF_ENDPOINT`` picks a mirror, ``HF_HUB_OFFLINE=1`` uses only
what is already here, hf_xet is used where it is installed, files download in
parallel and an interrupted download resumes. rigbook adds what a launch needs
around it: the files land in ``MODELS_DIR/ORG/NAME/REVISION`` (the folder the
plan names and a container mounts), the hub's listing is checked before
anything is written (no file outside that folder, enough free space), and every
file is checked after: LFS files against their sha256, the others against their
git blob id. A gated or private model without a token is E_HF_AUTH, saying how
to log in.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from fnmatch import fnmatch
from pathlib import Path

from pydantic import BaseModel

from rigbook.errors import EnvironmentProblem, FetchError, InputError, LaunchError
from rigbook.launch.plan import Download
from rigbook.paths import inside

CHUNK = 1 << 20


class RemoteFile(BaseModel):
    """One file of a repository at a revision, as the hub lists it."""

    path: str
    size: int | None = None
    sha256: str | None = None
    blob_id: str | None = None


def free_bytes(path: Path) -> int:
    """Free space on the disk that holds ``path`` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def _offline() -> bool:
    from huggingface_hub import constants

    return constants.is_offline_mode()


def _hub_error(exc: Exception, repo: str, revision: str) -> LaunchError | FetchError:
    """A huggingface_hub failure as a coded error."""
    from huggingface_hub import errors

    where = f"{repo}@{revision}"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, errors.GatedRepoError) or status in (401, 403):
        return LaunchError(
            "E_HF_AUTH",
            f"{where}: the hub refused the download (HTTP {status}): the model is "
            "gated or private and "
            + ("the token sent has no access" if _token() else "no token was sent"),
        )
    if isinstance(exc, errors.RevisionNotFoundError):
        return FetchError(
            "E_FETCH", f"{where}: the hub has no such revision", remedy="Check the recipe's pin."
        )
    if isinstance(exc, errors.RepositoryNotFoundError):
        return FetchError(
            "E_FETCH",
            f"{where}: the hub has no such repository (or it is private: `hf auth login`)",
        )
    if isinstance(exc, (errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled)):
        return FetchError(
            "E_FETCH",
            f"{where}: not downloaded yet, and the hub cannot be reached "
            f"({'HF_HUB_OFFLINE is set' if _offline() else exc})",
            remedy="Unset HF_HUB_OFFLINE or connect to the network, then run again.",
        )
    return FetchError(
        "E_FETCH",
        f"{where}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}; "
        "run again to resume",
    )


def _token() -> str | None:
    from huggingface_hub import get_token

    return get_token()


def list_files(repo: str, revision: str, endpoint: str | None = None) -> list[RemoteFile]:
    """The files of ``repo`` at ``revision`` with sizes, LFS sha256 and git blob ids."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    try:
        tree = HfApi(endpoint=endpoint).list_repo_tree(repo, revision=revision, recursive=True)
        return [
            RemoteFile(
                path=f.path, size=f.size, blob_id=f.blob_id, sha256=f.lfs.sha256 if f.lfs else None
            )
            for f in tree
            if isinstance(f, RepoFile)
        ]
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes a coded error
        raise _hub_error(exc, repo, revision) from None


def _git_blob_id(path: Path) -> str:
    digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(dest: Path, remote: RemoteFile) -> None:
    """``dest/remote.path`` is inside ``dest`` and is what the hub lists (size, then sha256 or
    git blob id)."""
    path = dest / remote.path
    if not inside(dest, path):
        raise LaunchError("E_UNSAFE", f"{remote.path} resolves outside {dest}")
    got_size = path.stat().st_size
    if remote.size is not None and got_size != remote.size:
        raise FetchError(
            "E_FETCH",
            f"{remote.path}: {got_size} bytes, the hub lists {remote.size}; delete it and "
            "run again",
        )
    if remote.sha256 is not None and _sha256(path) != remote.sha256:
        raise FetchError(
            "E_FETCH",
            f"{remote.path}: its sha256 does not match the hub's; delete it and run again",
        )
    if (
        remote.sha256 is None
        and remote.blob_id is not None
        and _git_blob_id(path) != remote.blob_id
    ):
        raise FetchError(
            "E_FETCH",
            f"{remote.path}: its git blob id does not match the hub's; delete it and run again",
        )


def fetch_weights(
    download: Download,
    *,
    endpoint: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Fetch the files of ``download`` (all, or those it names) into its folder; check each
    against the hub."""
    from huggingface_hub import snapshot_download

    remote = [] if _offline() else list_files(download.repo, download.revision, endpoint)
    if download.files:
        remote = [f for f in remote if any(fnmatch(f.path, pattern) for pattern in download.files)]
    for f in remote:
        # The listing is untrusted too: no file may land outside the destination.
        if f.path.startswith("/") or ".." in Path(f.path).parts or "\\" in f.path:
            raise FetchError(
                "E_FETCH", f"{download.repo} lists a file outside its folder: {f.path!r}"
            )
    for f in remote:
        if (download.dest / f.path).exists() and not (
            download.dest / ".cache" / "huggingface"
        ).is_dir():
            # A file rigbook did not fetch: yours, never overwritten without asking.
            try:
                verify(download.dest, f)
            except FetchError:
                raise InputError(
                    "E_CONFIRM",
                    f"{download.dest / f.path} exists and differs from {f.path} at the "
                    "pinned revision; not overwriting it",
                    remedy="Move or delete the file yourself, then run again.",
                ) from None
    need = sum(f.size or 0 for f in remote if not (download.dest / f.path).exists())
    free = free_bytes(download.dest)
    if need > free:
        raise EnvironmentProblem(
            "E_DISK",
            f"{download.repo}@{download.revision} needs {need / 1e9:.2f} GB; "
            f"{free / 1e9:.2f} GB free at {download.dest}",
        )
    if progress:
        progress(
            f"fetching {len(remote) or 'the'} file(s) of {download.repo}@{download.revision[:12]}"
        )
    try:
        snapshot_download(
            download.repo,
            revision=download.revision,
            local_dir=download.dest,
            endpoint=endpoint,
            allow_patterns=download.files or None,
        )
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes a coded error
        raise _hub_error(exc, download.repo, download.revision) from None
    for f in remote:
        verify(download.dest, f)
    return [download.dest / f.path for f in remote]
