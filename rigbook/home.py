"""Where rigbook keeps its state: one directory, ``RIGBOOK_HOME``.

Defaults to ``~/.local/state/rigbook``; never the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path


def rigbook_home() -> Path:
    """The state directory, created on first use."""
    raw = os.environ.get("RIGBOOK_HOME")
    home = Path(raw).expanduser() if raw else Path.home() / ".local" / "state" / "rigbook"
    home.mkdir(parents=True, exist_ok=True)
    return home


def state_dir(name: str) -> Path:
    """A named subdirectory of the state directory (``runs``, ``logs``, ``locks``, ``cache`` …)."""
    path = rigbook_home() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def dry_run_from_env() -> bool:
    """True when ``RIGBOOK_DRY_RUN`` asks for a dry run."""
    return os.environ.get("RIGBOOK_DRY_RUN", "").strip().lower() in {"1", "true", "yes", "on"}
