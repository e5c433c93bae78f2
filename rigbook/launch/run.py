"""`up`: run a plan's steps — refuse what is unsafe, lock the slot, fetch, start, wait,
smoke-test — and leave nothing behind on failure."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable

import psutil
from pydantic import BaseModel, Field

from rigbook.errors import InputError, LaunchError, RigbookError
from rigbook.findings import Finding
from rigbook.home import state_dir
from rigbook.launch import locks, state
from rigbook.launch.engines import engine_for
from rigbook.launch.logscan import log_size
from rigbook.launch.plan import LaunchCommand, Plan, StepKind
from rigbook.launch.safety import refuse_unless_allowed
from rigbook.launch.sandbox import exec_argv
from rigbook.launch.supervisor import start, stop_group, wait_ready
from rigbook.launch.weights import fetch_weights
from rigbook.openai.smoke import SmokeResult, smoke


class UpResult(BaseModel):
    """A launch that is LIVE: its state, how long readiness took, and the smoke test."""

    run: state.RunState | None
    url: str
    model_id: str
    ready_s: float
    smoke: SmokeResult
    findings: list[Finding] = Field(
        default_factory=list, description="The plan's findings (warnings included)."
    )
    command: LaunchCommand | None = Field(
        default=None, description="The engine process that was started."
    )
    engine_version: str | None = Field(
        default=None, description="The engine's version as its server reports it."
    )


Progress = Callable[[str], None]
STOP_GRACE_S = 15.0
# After Ctrl-C the engine gets this long to exit on SIGTERM before SIGKILL.
INTERRUPT_GRACE_S = 3.0


def refuse_blocking(plan: Plan) -> None:
    """Raise the first error finding of the check as the launch's error; all of them are listed."""
    blocking = plan.blocking
    if blocking:
        first = blocking[0]
        raise RigbookError(
            first.code,
            first.message,
            first.remedy,
            details=[f"{f.code}: {f.message}" for f in blocking[1:]],
        )


def refuse_unsafe(plan: Plan) -> None:
    """E_UNSAFE for each dangerous construct of the plan's verdict not allowed by name."""
    refuse_unless_allowed(plan.dangers, set(plan.target.allow))


def _run_step_command(command: LaunchCommand, progress: Progress) -> None:
    progress(f"$ {command.shown}")
    try:
        done = subprocess.run(
            exec_argv(command),
            env={**os.environ, **command.env},
            cwd=command.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        raise LaunchError("E_ENGINE_MISSING", f"{command.argv[0]!r} is not installed") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise LaunchError(
            "E_ENGINE_EXIT", f"`{command.shown}` failed with status {done.returncode}", details=tail
        )


def run_fetch_steps(plan: Plan, progress: Progress) -> None:
    """Run the engine and weights steps: clone or pull, patch, the script's dry run, the weights
    downloads."""
    for step in plan.steps:
        if step.kind in (StepKind.engine, StepKind.weights):
            progress(f"[{step.number}] {step.title}")
            for command in step.commands:
                _run_step_command(command, progress)
            for download in step.downloads:
                fetch_weights(download)


def _own_pid() -> tuple[int, float]:
    return os.getpid(), psutil.Process().create_time()


def run_plan(
    plan: Plan,
    *,
    confirm: Callable[[Plan], bool],
    progress: Progress,
    timeout: float,
) -> UpResult:
    """Run ``plan`` for real. ``confirm`` sees the plan before anything is changed.

    Everything comes from the plan (its spec, engine kind and danger verdict); the recipe is not
    read again.
    """
    engine = engine_for(plan.kind)
    refuse_unsafe(plan)
    refuse_blocking(plan)
    problem = engine.missing(plan.spec)
    if problem:
        raise LaunchError("E_ENGINE_MISSING", problem)
    if engine.starts_process:
        same = state.load(plan.target.name)
        if same is not None and same.alive:
            # One name, one state file: a second launch under it would orphan the first.
            raise InputError(
                "E_INPUT",
                f"a launch named {plan.target.name!r} already runs "
                f"(pid {same.pid}, port {same.port})",
                remedy=f"Stop it with `rigbook down {plan.target.name}`, "
                "or give this one another --name.",
            )
        locks.check_free(plan.target.slot)
    if not confirm(plan):
        raise InputError("E_CONFIRM", "not confirmed; nothing was started")
    findings = [f for s in plan.steps for f in s.findings]

    if plan.command is None:
        # Nothing to fetch or start: an external endpoint is ready when it passes the smoke test.
        run_fetch_steps(plan, progress)
        result = smoke(plan.url, plan.model_id, timeout=timeout)
        return UpResult(
            run=None,
            url=plan.url,
            model_id=result.model,
            ready_s=0.0,
            smoke=result,
            findings=findings,
        )

    # Locked in this process's name before anything is fetched, so a second `up` on these GPUs stops
    # here.
    locks.acquire(plan.target.slot, plan.target.name, *_own_pid())
    log_path = state_dir("logs") / f"{plan.target.name}.log"
    try:
        run_fetch_steps(plan, progress)
        since = log_size(log_path)
        proc = start(plan.command, log_path)
    except BaseException:
        locks.release(plan.target.slot, plan.target.name)
        raise
    try:
        create_time = psutil.Process(proc.pid).create_time()
        locks.hand_over(plan.target.slot, plan.target.name, proc.pid, create_time)
        run = state.RunState(
            name=plan.target.name,
            recipe=plan.recipe,
            kind=plan.kind,
            pid=proc.pid,
            pgid=proc.pid,
            create_time=create_time,
            started_at=state.now_iso(),
            url=plan.url,
            port=plan.target.port,
            model_id=plan.model_id,
            slot=plan.target.slot,
            log=str(log_path),
            argv=plan.command.argv,
            stop_commands=plan.stop_commands,
        )
        state.save(run)
        progress(f"started pid {proc.pid}; log {log_path}")
        ready_s = wait_ready(
            proc,
            plan.url,
            log_path,
            timeout,
            patterns=engine.log_patterns,
            since=since,
            progress=lambda s, line: progress(f"waiting {s:.0f}s  {line[:100]}"),
            ready_paths=engine.ready_paths,
        )
        result = smoke(plan.url, plan.model_id)
    except KeyboardInterrupt:
        # Said at once, and quick: the person pressing Ctrl-C is waiting for the prompt.
        progress(
            f"interrupted: stopping {plan.target.name} (pid {proc.pid}), "
            f"at most {INTERRUPT_GRACE_S:.0f} s"
        )
        teardown(
            plan.target.name,
            proc.pid,
            plan.target.slot,
            plan.stop_commands,
            child=proc,
            grace_s=INTERRUPT_GRACE_S,
        )
        raise
    except BaseException:
        # A timeout, a failed smoke test: nothing of the launch is left running.
        teardown(plan.target.name, proc.pid, plan.target.slot, plan.stop_commands, child=proc)
        raise
    return UpResult(
        run=run,
        url=plan.url,
        model_id=result.model,
        ready_s=round(ready_s, 2),
        smoke=result,
        findings=findings,
        command=plan.command,
        engine_version=engine.served_version(plan.url),
    )


def teardown(
    name: str,
    pgid: int,
    slot: list[str],
    stop_commands: list[LaunchCommand],
    *,
    child: subprocess.Popen | None = None,
    grace_s: float = STOP_GRACE_S,
) -> bool:
    """Stop a launch: its stop commands (e.g. `docker stop`), then its process group; release its
    locks and state.

    ``grace_s`` bounds each stop command and the wait after SIGTERM before SIGKILL.
    """
    for command in stop_commands:
        # The process group is killed below either way.
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                command.argv,
                env={**os.environ, **command.env},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=max(grace_s, 1.0) * 4,
            )
    gone = stop_group(pgid, child=child, grace_s=grace_s)
    locks.release(slot, name)
    state.remove(name)
    return gone
