"""The state of each launch, one JSON file per name under RIGBOOK_HOME/runs, so it outlives the CLI process."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

import psutil
from pydantic import BaseModel, Field, ValidationError

from rigbook.errors import InputError
from rigbook.home import state_dir
from rigbook.launch.plan import LaunchCommand


class RunState(BaseModel):
    """One launch: what runs, where, since when."""

    name: str
    recipe: str
    kind: str
    pid: int
    pgid: int
    create_time: float = Field(
        description="The process's start time, so a reused pid is not mistaken for it."
    )
    started_at: str
    url: str
    port: int
    model_id: str | None
    slot: list[str]
    log: str
    argv: list[str]
    stop_commands: list[LaunchCommand] = Field(default_factory=list)

    @property
    def alive(self) -> bool:
        """True while the engine process (the same one, not a reused pid) runs."""
        return process_alive(self.pid, self.create_time)


def process_alive(pid: int, create_time: float | None = None) -> bool:
    """True when ``pid`` runs (and, if given, started at ``create_time``) and is not a zombie."""
    try:
        proc = psutil.Process(pid)
        if create_time is not None and abs(proc.create_time() - create_time) > 1.0:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def now_iso() -> str:
    """The current time, ISO 8601 with the UTC offset."""
    return datetime.now(UTC).isoformat(timespec="seconds")


# A launch name is also a file name under RIGBOOK_HOME: no '/', no leading '.', so it cannot reach outside.
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")


def check_name(name: str, option: str = "NAME") -> str:
    """``name`` when it is a valid launch name, else E_INPUT."""
    if not NAME.match(name):
        raise InputError(
            "E_INPUT",
            f"{option} {name!r}: use lower-case letters, digits, '-', '_' or '.' (at most 63, "
            "starting with a letter or digit)",
            remedy="See `rigbook status` for the names of your launches.",
        )
    return name


def _path(name: str):
    return state_dir("runs") / f"{check_name(name)}.json"


def save(run: RunState) -> None:
    """Write the state atomically (write then rename)."""
    path = _path(run.name)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(run.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, path)


def load(name: str) -> RunState | None:
    """The state of launch ``name``, or None."""
    try:
        return RunState.model_validate_json(_path(name).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValidationError, ValueError):
        return None


def remove(name: str) -> None:
    """Forget launch ``name``."""
    _path(name).unlink(missing_ok=True)


def all_runs() -> list[RunState]:
    """Every recorded launch, running or stale, by start time."""
    runs = [load(p.stem) for p in sorted(state_dir("runs").glob("*.json")) if NAME.match(p.stem)]
    return sorted((r for r in runs if r is not None), key=lambda r: r.started_at)
