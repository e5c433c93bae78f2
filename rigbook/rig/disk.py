"""Free disk space where models are stored."""

from __future__ import annotations

import shutil
from pathlib import Path

from rigbook.home import rigbook_home
from rigbook.rig.model import Disk


def default_models_dir() -> Path:
    """Where rigbook stores weights unless told otherwise (as `rigbook up` does): RIGBOOK_HOME/models."""
    return rigbook_home() / "models"


def probe_disk(path: Path) -> Disk:
    """Free and total bytes of the filesystem that holds ``path`` (or its nearest existing parent)."""
    path = path.expanduser()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        usage = shutil.disk_usage(existing)
    except OSError as exc:
        return Disk(path=str(path), error=exc.strerror or str(exc))
    return Disk(path=str(path), free_bytes=usage.free, total_bytes=usage.total)
