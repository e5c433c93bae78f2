"""`rigbook plan`, `up`, `down`, `status`, `logs`, `smoke`: thin wrappers over rigbook.launch."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from rigbook.cli.output import JsonOption, console, emit, err_console, handled, write_text
from rigbook.errors import InputError
from rigbook.findings import Finding
from rigbook.home import dry_run_from_env
from rigbook.launch import control
from rigbook.launch.api import make_plan
from rigbook.launch.api import up as launch_up
from rigbook.launch.plan import Plan
from rigbook.launch.planner import DEFAULT_READY_TIMEOUT
from rigbook.launch.rules.table import OPTION_ALLOW
from rigbook.launch.run import UpResult
from rigbook.launch.safety import allow_flag
from rigbook.openai import SmokeResult, base_url
from rigbook.openai import smoke as smoke_endpoint

RecipeArgument = typer.Argument(
    None, help="A recipe slug, file or URL (default: the built-in recipe for this machine)."
)
RigOption = typer.Option(
    None,
    "--rig",
    help="A saved Rig JSON file (default: probe this machine, read-only; "
    "`up --dry-run` does not probe).",
)
GpusOption = typer.Option(
    None, "--gpus", help="GPUs to use: NVML indices or UUIDs, comma-separated (e.g. 0,1)."
)
PortOption = typer.Option(
    None, "--port", help="Host port to serve on, 1-65535 (default: the recipe's)."
)
ModelsDirOption = typer.Option(
    None, "--models-dir", help="Where weights are stored (default: RIGBOOK_HOME/models)."
)
AllowOption = typer.Option(
    [], "--allow", help="Allow one dangerous option by name (repeatable), e.g. privileged."
)
AllowOptionOption = typer.Option(
    [],
    "--allow-option",
    help="Allow one engine option the engine's option table does not list (repeatable), "
    "e.g. --allow-option --new-flag.",
)
DrafterOption = typer.Option(
    None, "--drafter", help="Drafter for a script recipe that offers one (e.g. mtp)."
)


def _print_finding(finding: Finding, indent: str = "", soft_wrap: bool = False) -> None:
    """One finding: its severity and code in colour, then its message and remedy as plain text."""
    colour = {"error": "red", "warning": "yellow"}.get(finding.severity.value, "blue")
    console.print(
        f"{indent}[{colour}]{finding.severity.value}[{finding.code}][/]: ", end="", highlight=False
    )
    console.print(
        f"{finding.message} — {finding.remedy}", markup=False, highlight=False, soft_wrap=soft_wrap
    )


def render_plan(plan: Plan) -> None:
    """The numbered steps, their details, the exact commands and any findings."""
    mode = "dry run: nothing is touched" if plan.dry_run else "plan"
    console.print(
        f"[bold]{plan.recipe}[/] ({plan.kind}) as [bold]{plan.target.name}[/] — {mode}",
        highlight=False,
    )
    if plan.target.allow:
        allowed = ", ".join(allow_flag(a) for a in plan.target.allow)
        console.print(f"allowed by you: {allowed}", markup=False, highlight=False, soft_wrap=True)
    for step in plan.steps:
        console.print(
            f"[bold]{step.number}.[/] {escape(step.title)}", highlight=False, soft_wrap=True
        )
        for line in step.details:
            console.print(f"     {line}", markup=False, highlight=False, soft_wrap=True)
        for command in step.commands:
            console.print(f"     $ {command.shown}", markup=False, highlight=False, soft_wrap=True)
        for finding in step.findings:
            _print_finding(finding, indent="     ")


def render_findings_and_command(plan: Plan) -> None:
    """What `up --yes` shows before it goes on: every finding, warnings included, and the exact start command."""
    findings = [f for s in plan.steps for f in s.findings]
    for finding in findings:
        _print_finding(finding, soft_wrap=True)
    if plan.command is not None:
        console.print(
            f"starting {plan.recipe} as {plan.target.name}: $ {plan.command.shown}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(f"nothing to start: smoke test of {plan.url}", markup=False, highlight=False)


def _exit_if_blocked(plan: Plan, as_json: bool) -> None:
    if plan.blocking:
        if not as_json:
            codes = ", ".join(sorted({f.code for f in plan.blocking}))
            err_console.print(
                f"[bold red]error[{plan.blocking[0].code}][/]: the plan has error findings ({codes}); "
                "`up` would refuse it",
                highlight=False,
            )
        raise typer.Exit(2)


def _allowed(allow: list[str], allow_option: list[str]) -> list[str]:
    """--allow names, then each --allow-option as the allow entry that names an engine option."""
    return [*allow, *(OPTION_ALLOW + o for o in allow_option)]


def plan(
    recipe: str = RecipeArgument,
    rig: Path = RigOption,
    gpus: str = GpusOption,
    port: str = PortOption,
    models_dir: Path = ModelsDirOption,
    drafter: str = DrafterOption,
    allow: list[str] = AllowOption,
    allow_option: list[str] = AllowOptionOption,
    as_json: bool = JsonOption,
) -> None:
    """Print the numbered steps `up` would take on this machine; reads it (as `rigbook rig` does), changes nothing."""
    with handled(as_json):
        _, made = make_plan(
            recipe,
            rig=rig,
            probe=True,
            gpus=gpus,
            port=port,
            models_dir=models_dir,
            drafter=drafter,
            allow=_allowed(allow, allow_option),
        )
        emit(made, as_json, lambda: render_plan(made))
        _exit_if_blocked(made, as_json)


class _Progress:
    """Live progress: a rich status line on a terminal, plain lines (at most every few seconds) otherwise."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.tty = err_console.is_terminal
        self.status = err_console.status("starting") if self.tty and not quiet else None
        self.last_plain = 0.0

    def __enter__(self):
        if self.status:
            self.status.__enter__()
        return self

    def __exit__(self, *exc):
        if self.status:
            self.status.__exit__(*exc)

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        if self.status:
            self.status.update(message)
        elif not message.startswith("waiting") or time.monotonic() - self.last_plain > 5:
            self.last_plain = time.monotonic()
            err_console.print(message, markup=False, highlight=False)


def up(
    recipe: str = RecipeArgument,
    rig: Path = RigOption,
    gpus: str = GpusOption,
    port: str = PortOption,
    models_dir: Path = ModelsDirOption,
    drafter: str = DrafterOption,
    name: str = typer.Option(
        None, "--name", help="Name of this launch (default: the recipe slug)."
    ),
    timeout: float = typer.Option(
        DEFAULT_READY_TIMEOUT, "--timeout", help="Seconds to wait for readiness."
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Do not ask for confirmation (for scripts)."
    ),
    allow: list[str] = AllowOption,
    allow_option: list[str] = AllowOptionOption,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the steps only (also RIGBOOK_DRY_RUN=1)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Launch a recipe: check, fetch, start the engine, wait until ready, smoke-test; prints `LIVE on port N`."""
    dry = dry_run or dry_run_from_env()
    choices: dict[str, Any] = dict(
        rig=rig,
        gpus=gpus,
        port=port,
        models_dir=models_dir,
        drafter=drafter,
        name=name,
        allow=_allowed(allow, allow_option),
        timeout=timeout,
        unattended=yes and not dry,
    )
    with handled(as_json):
        if dry:
            _, made = make_plan(recipe, probe=False, dry_run=True, **choices)
            emit(made, as_json, lambda: render_plan(made))
            _exit_if_blocked(made, as_json)
            return
        with _Progress(quiet=as_json) as progress:
            result = launch_up(
                recipe, confirm=_confirmer(yes, as_json), progress=progress, probe=True, **choices
            )
        emit(result, as_json, lambda: render_live(result))


def _confirmer(yes: bool, as_json: bool):
    """`up`'s question before anything changes: none with --yes (the findings and command are shown), else ask."""

    def confirm(p: Plan) -> bool:
        if yes:
            if not as_json:  # with --json the result carries the findings and the command
                render_findings_and_command(p)
            return True
        if not sys.stdin.isatty():
            raise InputError("E_CONFIRM", "not a terminal and --yes not given; nothing was started")
        render_plan(p)
        return typer.confirm(f"Start {p.target.name}?", default=False)

    return confirm


def render_live(result: UpResult) -> None:
    """`LIVE on port N`, the smoke reply, and how to stop it."""
    port_shown = result.url.rsplit(":", 1)[-1]
    engine = f"  engine {result.engine_version}" if result.engine_version else ""
    console.print(
        f"[bold green]LIVE on port {port_shown}[/]  {result.url}/v1  model {result.model_id}{engine}",
        highlight=False,
    )
    console.print(
        f"smoke: {result.smoke.reply!r} in {result.smoke.seconds:.2f} s; ready after {result.ready_s:.1f} s",
        markup=False,
        highlight=False,
    )
    if result.run:
        console.print(f"stop with: rigbook down {result.run.name}", markup=False, highlight=False)


def down(
    name: str = typer.Argument(None, help="The launch to stop (default: the only one running)."),
    everything: bool = typer.Option(False, "--all", help="Stop every running launch."),
    as_json: bool = JsonOption,
) -> None:
    """Stop a launch: its whole process group (and its container), its locks and its state."""
    with handled(as_json):
        stopped = control.down(name, everything=everything)

        def show() -> None:
            for s in stopped:
                console.print(
                    f"stopped {s.name} (pid {s.pid})"
                    + ("" if s.gone else " — some processes did not exit"),
                    highlight=False,
                )

        emit(stopped, as_json, show)


def status(as_json: bool = JsonOption) -> None:
    """What runs: name, recipe, pid, port, model, since when, and whether it answers."""
    with handled(as_json):
        runs = control.status()

        def render() -> None:
            if not runs:
                console.print("nothing runs")
            for r in runs:
                health = (
                    "stale (process gone; forgotten now)"
                    if r.stale
                    else ("healthy" if r.healthy else "not answering")
                )
                console.print(
                    f"{r.name}  pid {r.pid}  {r.url}  model {r.model_id}  since {r.started_at}  {health}",
                    markup=False,
                    highlight=False,
                )

        emit(runs, as_json, render)


def logs(
    name: str = typer.Argument(..., help="The launch whose engine log to print."),
    follow: bool = typer.Option(
        False, "-f", "--follow", help="Keep printing new lines until the engine stops (or Ctrl-C)."
    ),
) -> None:
    """Print a launch's engine log."""
    with handled(False):
        path = Path(control.log_path(name))
        with path.open("rb") as handle:
            while True:
                chunk = handle.read(65536)
                if chunk:
                    write_text(chunk.decode("utf-8", errors="replace"))
                    continue
                run = control.state.load(name)
                if not follow or run is None or not run.alive:
                    return
                time.sleep(0.5)


def smoke(
    url: str = typer.Argument(..., help="The endpoint's base URL, e.g. http://127.0.0.1:8080."),
    model: str = typer.Option(
        None, "--model", help="The model id to test (default: the first the endpoint lists)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Check the model is served and answers "Say READY in one word." at temperature 0."""
    with handled(as_json):
        result: SmokeResult = smoke_endpoint(base_url(url), model)
        emit(
            result,
            as_json,
            lambda: console.print(
                f"{result.model} at {result.url}: {result.reply!r} in {result.seconds:.2f} s"
                + (f" ({result.completion_tokens} tokens)" if result.completion_tokens else ""),
                markup=False,
                highlight=False,
            ),
        )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    for command in (plan, up, down, status, logs, smoke):
        app.command(command.__name__)(command)
