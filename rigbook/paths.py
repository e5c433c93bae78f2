"""Paths stay inside their roots: checked after ``..`` and symlinks are resolved.

The one place this is decided, for the weights folder (``rigbook.recipe.hf``), the disk check,
the downloads and the launch rules.
"""

from __future__ import annotations

import os
from pathlib import Path

from rigbook.errors import LaunchError


def real(path: Path | str) -> Path:
    """``path`` with ``~`` expanded and every symlink and ``..`` resolved."""
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def inside(root: Path | str, path: Path | str) -> bool:
    """``path`` (symlinks resolved) is ``root`` or lies under it."""
    real_root = real(root)
    resolved = real(path)
    return resolved == real_root or resolved.is_relative_to(real_root)


def contained(root: Path, *parts: str, what: str) -> Path:
    """``root/parts…``; E_UNSAFE when it resolves (``..``, symlinks) outside ``root``."""
    path = Path(root, *parts)
    if any(Path(p).is_absolute() for p in parts) or not inside(root, path):
        raise LaunchError(
            "E_UNSAFE",
            f"{what} {'/'.join(parts)!r} leads outside {root} (to {real(path)})",
            remedy="A recipe's paths must stay inside their folder; fix the recipe or its source.",
        )
    return path
