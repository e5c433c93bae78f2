"""Can this machine sandbox native engines? bubblewrap's presence, the kernel's namespaces, and
one real try; and the check that says so (W_SANDBOX).

The sandbox itself is :mod:`rigbook.launch.sandbox`; this module sits in preflight so that `check`
can ask without importing the launch package (which imports the check).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel

from rigbook.findings import Finding
from rigbook.preflight.context import CheckContext
from rigbook.recipe.schema import Recipe

#: Launch kinds that start a program on this host (docker has its own isolation, external none).
NATIVE_KINDS = frozenset({"llama_server", "llama_cpp", "vllm", "sglang", "script_repo"})
#: The `--allow` name that runs a native engine without the sandbox.
ALLOW = "no-sandbox"
#: The bubblewrap program; RIGBOOK_BWRAP names another (a path), e.g. one built by hand.
BWRAP_ENV = "RIGBOOK_BWRAP"

# Namespaces and capabilities; the network namespace stays the host's (rigbook reaches the engine
# on loopback).
ISOLATION = [
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
]


class Availability(BaseModel):
    """Whether native engines can be sandboxed here: the program, or why not."""

    ok: bool
    program: str | None = None
    reason: str | None = None


def bwrap_program() -> str | None:
    """The bubblewrap program: ``RIGBOOK_BWRAP``, else ``bwrap`` on PATH."""
    named = os.environ.get(BWRAP_ENV)
    if named:
        return named
    return shutil.which("bwrap")


def _namespaces_refused() -> str | None:
    """Why this kernel refuses user namespaces to an unprivileged bubblewrap, or None."""
    for knob, refused in (
        ("/proc/sys/user/max_user_namespaces", "0"),
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
    ):
        try:
            if Path(knob).read_text().strip() == refused:
                return f"{knob} is {refused}"
        except OSError:
            continue
    return None


def availability() -> Availability:
    """Whether bubblewrap is installed and this kernel lets it make namespaces (read from files:
    `plan` and a dry run start no process; :func:`probe` tries it for real)."""
    program = bwrap_program()
    if program is None:
        return Availability(ok=False, reason="bubblewrap (bwrap) is not installed")
    if not os.access(program, os.X_OK):
        return Availability(ok=False, reason=f"{program} is not an executable program")
    setuid = bool(os.stat(program).st_mode & 0o4000)
    why = None if os.geteuid() == 0 or setuid else _namespaces_refused()
    if why:
        return Availability(ok=False, reason=f"user namespaces are off ({why})")
    return Availability(ok=True, program=program)


@functools.lru_cache(maxsize=8)
def _tried(program: str) -> str | None:
    # The options every launch uses, on a command that does nothing: a container's seccomp policy
    # or a security module against namespaces fails here, before the engine's log would say it.
    try:
        done = subprocess.run(
            [program, *ISOLATION, "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{program} could not run: {exc}"
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"status {done.returncode}"])[-1]
    return None


def probe() -> Availability:
    """:func:`availability`, then bubblewrap run once for real (the result is kept)."""
    found = availability()
    if not found.ok or found.program is None:
        return found
    why = _tried(found.program)
    if why:
        return Availability(ok=False, reason=f"{found.program} cannot make a sandbox here: {why}")
    return found


def launch_kind(recipe: Recipe) -> str | None:
    """The kind of launch ``recipe`` has, read the way ``rigbook.launch.spec`` reads it (its
    launch block, else its ``config.launch`` argv); None when it has none rigbook runs."""
    if recipe.ext.launch is not None:
        return recipe.ext.launch.kind
    argv = recipe.config.launch
    if argv[:2] == ["docker", "run"]:
        return "docker"
    if argv[:2] == ["vllm", "serve"]:
        return "vllm"
    if argv[1:3] == ["-m", "sglang.launch_server"]:
        return "sglang"
    return None


def check_sandbox(ctx: CheckContext) -> list[Finding]:
    """W_SANDBOX when the recipe starts a native engine and no sandbox can be made on this
    machine (a live rig only: a saved rig's document says nothing of bubblewrap)."""
    if not ctx.rig.live or launch_kind(ctx.recipe) not in NATIVE_KINDS:
        return []
    found = probe()
    if found.ok:
        return []
    return [
        Finding.make(
            "W_SANDBOX",
            f"the {launch_kind(ctx.recipe)} engine cannot be sandboxed here: {found.reason}; "
            f"`up` refuses it unless you pass --allow {ALLOW}",
        )
    ]
