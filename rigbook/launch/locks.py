"""Locks on the GPUs (or the CPU slot) a launch uses.

A lock is a JSON record per slot key (``gpu-0``, ``gpu-GPU-…``, ``cpu``) naming the
launch, its pid and since when; it is held while that pid runs, so it outlives
the CLI process that took it. A file lock makes take-and-check atomic between
two `up` commands started at once. A record whose pid is gone is stale and taken over.

`up` takes the lock in its own name before it fetches anything, so a second `up`
on the same GPUs is refused before it downloads or starts; once the engine runs,
the lock is handed to the engine's pid, so it outlives the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from filelock import FileLock
from pydantic import BaseModel

from rigbook.errors import LaunchError
from rigbook.home import state_dir
from rigbook.launch.state import now_iso, process_alive


class Holder(BaseModel):
    """Who holds a slot."""

    key: str
    name: str
    pid: int
    create_time: float | None = None
    since: str


@contextmanager
def _guard() -> Iterator[None]:
    with FileLock(str(state_dir("locks") / ".guard.lock"), timeout=30):
        yield


def _record(key: str):
    return state_dir("locks") / f"{key}.json"


def holder(key: str) -> Holder | None:
    """The live holder of ``key``, or None (stale records do not count)."""
    try:
        held = Holder.model_validate(json.loads(_record(key).read_text(encoding="utf-8")))
    except (FileNotFoundError, ValueError):
        return None
    return held if process_alive(held.pid, held.create_time) else None


def _refuse_if_held(keys: list[str]) -> None:
    taken = [h for h in (holder(k) for k in keys) if h is not None]
    if taken:
        names = " / ".join(sorted({h.name for h in taken}))
        # The CPU slot has no other to pick: the remedy says only what can be done.
        other = "" if all(h.key == "cpu" for h in taken) else ", or pick other GPUs with `--gpus`"
        raise LaunchError(
            "E_LOCKED",
            "; ".join(
                f"{h.key} is held by launch {h.name!r} (pid {h.pid}, since {h.since})"
                for h in taken
            ),
            f"Stop that launch with `rigbook down {names}`{other}.",
        )


def acquire(keys: list[str], name: str, pid: int, create_time: float | None = None) -> None:
    """Take every key for launch ``name`` (pid ``pid``), or raise E_LOCKED saying who holds them."""
    with _guard():
        _refuse_if_held(keys)
        since = now_iso()
        for key in keys:
            record = Holder(key=key, name=name, pid=pid, create_time=create_time, since=since)
            _record(key).write_text(record.model_dump_json(), encoding="utf-8")


def hand_over(keys: list[str], name: str, pid: int, create_time: float | None = None) -> None:
    """Give the keys launch ``name`` holds to its engine process ``pid``; E_LOCKED if another launch took one."""
    with _guard():
        for key in keys:
            try:
                held = Holder.model_validate(json.loads(_record(key).read_text(encoding="utf-8")))
            except (FileNotFoundError, ValueError):
                held = None
            if held is None or held.name != name:
                _refuse_if_held([key])
            since = held.since if held is not None and held.name == name else now_iso()
            record = Holder(key=key, name=name, pid=pid, create_time=create_time, since=since)
            _record(key).write_text(record.model_dump_json(), encoding="utf-8")


def check_free(keys: list[str]) -> None:
    """Raise E_LOCKED when a running launch holds any of ``keys`` (checked before anything is started)."""
    with _guard():
        _refuse_if_held(keys)


def release(keys: list[str], name: str) -> None:
    """Drop the records of ``keys`` that launch ``name`` holds (or that are stale)."""
    with _guard():
        for key in keys:
            path = _record(key)
            try:
                held = Holder.model_validate(json.loads(path.read_text(encoding="utf-8")))
            except (FileNotFoundError, ValueError):
                continue
            if held.name == name or not process_alive(held.pid, held.create_time):
                path.unlink(missing_ok=True)
