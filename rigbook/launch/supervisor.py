"""Start an engine in its own process group with its log in a file; wait for it; stop the whole group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from rigbook.errors import LaunchError, RigbookError
from rigbook.launch.logscan import LogPattern, explain_exit, read_tail, scan_lines
from rigbook.launch.plan import LaunchCommand
from rigbook.launch.sandbox import exec_argv
from rigbook.openai.urls import MODELS_PATH, server_url

POLL_S = 0.5


def start(command: LaunchCommand, log_path: Path) -> subprocess.Popen:
    """Start ``command`` (argv list, never a shell; inside its sandbox when it has one) in a new
    session, output appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        try:
            return subprocess.Popen(
                exec_argv(command),
                env={**os.environ, **command.env},
                cwd=command.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise LaunchError(
                "E_ENGINE_MISSING", f"cannot start {command.argv[0]!r}: not found"
            ) from None
        except PermissionError:
            raise LaunchError(
                "E_ENGINE_MISSING", f"cannot start {command.argv[0]!r}: not executable"
            ) from None


def group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes of process group ``pgid``."""
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error, OSError):
            continue
    return members


def stop_group(pgid: int, *, grace_s: float = 15.0, child: subprocess.Popen | None = None) -> bool:
    """SIGTERM the group, SIGKILL what is left after ``grace_s``; True when nothing of it remains."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if child is not None:
                child.poll()  # reap our own child so it does not linger as a zombie
            if not group_members(pgid):
                return True
            time.sleep(0.2)
    return not group_members(pgid)


def probe_ready(url: str, timeout: float = 2.0, paths: tuple[str, ...] = (MODELS_PATH,)) -> bool:
    """True when each of ``paths`` (default the model list) answers 200 at ``url``, tried in order."""
    try:
        return all(
            httpx.get(server_url(url, path), timeout=timeout).status_code == 200 for path in paths
        )
    except httpx.HTTPError:
        return False


def wait_ready(
    proc: subprocess.Popen,
    url: str,
    log_path: Path,
    timeout: float,
    *,
    patterns: list[LogPattern] | None = None,
    since: int = 0,
    progress: Callable[[float, str], None] | None = None,
    ready_paths: tuple[str, ...] = (MODELS_PATH,),
) -> float:
    """Poll readiness until ``timeout``; the engine's exit or the timeout become coded errors from its log.

    Only the log written after byte ``since`` (where this launch started appending) is read. A line
    matching a ``fatal`` pattern ends the wait at once with its code, while the engine still runs.
    """
    started = time.monotonic()
    fatal_patterns = [p for p in patterns or [] if p.fatal]
    while True:
        elapsed = time.monotonic() - started
        code = proc.poll()
        if code is not None:
            lines = read_tail(log_path, since=since)
            hit = explain_exit(lines, patterns)
            first = f": {hit.line}" if hit else " (the log has no error line)"
            raise RigbookError(
                hit.code if hit else "E_ENGINE_EXIT",
                f"the engine exited with status {code} after {elapsed:.0f} s{first}",
                details=[f"log: {log_path}" + (f" line {hit.line_no} ({hit.why})" if hit else "")],
            )
        if probe_ready(url, paths=ready_paths):
            return elapsed
        fatal = (
            scan_lines(read_tail(log_path, since=since), fatal_patterns, common=False)
            if fatal_patterns
            else None
        )
        if fatal:
            raise LaunchError(
                fatal.code,
                f"the engine failed after {elapsed:.0f} s: {fatal.line}",
                details=[f"log: {log_path} line {fatal.line_no} ({fatal.why})"],
            )
        if elapsed > timeout:
            hit = scan_lines(read_tail(log_path, since=since), patterns)
            details = [f"log: {log_path}"] + (
                [f"the log shows {hit.code} at line {hit.line_no}: {hit.line}"] if hit else []
            )
            raise LaunchError(
                "E_NOT_READY", f"{url} was not ready after {timeout:.0f} s", details=details
            )
        if progress:
            tail = read_tail(log_path, 4096, since=since)
            progress(elapsed, tail[-1].strip() if tail else "")
        time.sleep(POLL_S)
