"""Every path a recipe names stays inside its root, checked after ``..`` and symlinks are resolved.

The recipe names weights repositories and revisions, model files, patches and
cache folders; each becomes a path under a folder rigbook owns (the models
folder, the clone). Names are checked at validation (see the schema's patterns);
the joined path is resolved, symlinks included, and must still lie inside its
root before anything is fetched, walked or mounted (:mod:`rigbook.paths`).
"""

from __future__ import annotations

import os
from pathlib import Path

from rigbook.launch.rules import Danger
from rigbook.paths import inside, real


def path_danger(value: str, root: Path, what: str) -> list[Danger]:
    """A Danger when ``value`` (absolute, or relative to ``root``) resolves outside ``root``."""
    path = Path(os.path.expanduser(value))
    path = path if path.is_absolute() else root / path
    if inside(root, path):
        return []
    return [Danger(None, f"{what} {value!r} resolves to {real(path)}, outside {root}")]
