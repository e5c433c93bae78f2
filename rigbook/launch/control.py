"""`down`, `status`, `logs`: the launches recorded under RIGBOOK_HOME, checked against what really runs."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rigbook.errors import InputError, LaunchError
from rigbook.home import state_dir
from rigbook.launch import locks, state
from rigbook.launch.docker_client import remove_leftovers
from rigbook.launch.run import teardown
from rigbook.launch.supervisor import group_members, probe_ready


class RunStatus(BaseModel):
    """One launch as `status` shows it."""

    name: str
    recipe: str
    kind: str
    pid: int
    port: int
    url: str
    model_id: str | None
    started_at: str
    log: str
    running: bool
    healthy: bool
    stale: bool


class Stopped(BaseModel):
    """What `down` stopped."""

    name: str
    pid: int = Field(description="0 for a container a killed launch left, removed by name.")
    gone: bool


def status(*, clean: bool = True) -> list[RunStatus]:
    """Every recorded launch; a stale one (its pid is gone) is shown once and then forgotten."""
    shown = []
    for run in state.all_runs():
        alive = run.alive
        shown.append(
            RunStatus(
                name=run.name,
                recipe=run.recipe,
                kind=run.kind,
                pid=run.pid,
                port=run.port,
                url=run.url,
                model_id=run.model_id,
                started_at=run.started_at,
                log=run.log,
                running=alive,
                healthy=alive and probe_ready(run.url),
                stale=not alive,
            )
        )
        if not alive and clean:
            locks.release(run.slot, run.name)
            state.remove(run.name)
    return shown


def _running() -> list[state.RunState]:
    return [r for r in state.all_runs() if r.alive or group_members(r.pgid)]


def down(name: str | None = None, *, everything: bool = False) -> list[Stopped]:
    """Stop launch ``name``; with no name the only one running, or every one with ``everything``."""
    # Containers that killed launches left (their records gone or stale) go first.
    live = {r.name for r in state.all_runs() if r.alive}
    left = [Stopped(name=c, pid=0, gone=True) for c in remove_leftovers(name, keep=live)]
    if name:
        run = state.load(name)
        if run is None:
            if left:
                return left
            raise LaunchError("E_NOT_RUNNING", f"no launch named {name!r}")
        targets = [run]
    else:
        targets = _running()
        if not targets:
            if left:
                return left
            raise LaunchError("E_NOT_RUNNING", "no launch is running")
        if len(targets) > 1 and not everything:
            raise InputError(
                "E_INPUT",
                f"{len(targets)} launches run ({', '.join(r.name for r in targets)}): "
                "name one, or pass --all",
            )
    return left + [
        Stopped(name=r.name, pid=r.pid, gone=teardown(r.name, r.pgid, r.slot, r.stop_commands))
        for r in targets
    ]


def log_path(name: str) -> str:
    """The log file of launch ``name`` (also after it stopped, while the file exists)."""
    path = state_dir("logs") / f"{state.check_name(name)}.log"
    if not path.exists():
        raise LaunchError("E_NOT_RUNNING", f"no log for a launch named {name!r} in {path.parent}")
    return str(path)
