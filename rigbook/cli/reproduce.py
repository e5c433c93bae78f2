"""`rigbook reproduce`: a thin wrapper over rigbook.reproduce."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from rigbook.bench.repeats import DEFAULT_MAX_REPEATS, DEFAULT_TARGET_PCT
from rigbook.cli import bench_options as opt
from rigbook.cli.bench import _stop_on_signals
from rigbook.cli.launch import (
    DrafterOption,
    GpusOption,
    ModelsDirOption,
    PortOption,
    RigOption,
    render_findings_and_command,
    render_live,
    render_plan,
)
from rigbook.cli.output import JsonOption, console, emit, err_console, handled
from rigbook.errors import InputError, RigbookError
from rigbook.home import dry_run_from_env
from rigbook.launch.plan import Plan
from rigbook.launch.planner import DEFAULT_READY_TIMEOUT


def _confirmer(yes: bool, as_json: bool):
    def confirm(plan: Plan) -> bool:
        if yes:
            if not as_json:
                render_findings_and_command(plan)
            return True
        if not sys.stdin.isatty():
            raise InputError("E_CONFIRM", "not a terminal and --yes not given; nothing was started")
        render_plan(plan)
        return typer.confirm(f"Start {plan.target.name} and bench it?", default=False)

    return confirm


def _dry_run_steps(request) -> list[str]:
    from rigbook.reproduce.run import plan_reproduction

    _, claims = plan_reproduction(request)
    return [
        f"bench {claims.profile} profile at concurrency {', '.join(str(c) for c in claims.levels)}, "
        f"{claims.max_tokens}-token replies, each level repeated until its 95 % interval is within "
        f"±{request.ci_target_pct:g} % (at most {request.max_repeats} repeats"
        + (f" or {request.max_level_s:g} s a level)" if request.max_level_s else ")"),
        f"compare with {len(claims.claims.points)} claim(s) of the recipe; verdict table",
        "stop the engine; leave result, comparison and report in one folder",
        *[f"assumed: {a}" for a in claims.assumed],
    ]


def _published_line(done) -> str:
    signed = f", signed by {done.signed_by}" if done.signed_by else ""
    again = " (published before: nothing added)" if done.duplicate else ""
    return (
        f"published: {done.verdict}, reproduction of revision {done.reproduced_revision}, "
        f"in revision {done.revision}{signed}{again}: {done.url}"
    )


@opt.bench_options(
    [
        "profile",
        "workload",
        "dataset_size",
        "seed",
        "min_prompt_chars",
        "max_prompt_chars",
        "concurrency",
        "max_tokens",
        "requests",
        "stall_timeout_s",
        "ci_target_pct",
        "max_repeats",
        "max_level_s",
        "client",
    ],
    # ReproduceRequest's defaults (a test holds them equal): each level is repeated, since the
    # claims are judged on intervals; rigbook.reproduce.run is imported only when a command runs
    defaults={
        "profile": None,
        "ci_target_pct": DEFAULT_TARGET_PCT,
        "max_repeats": DEFAULT_MAX_REPEATS,
        "max_level_s": 300.0,
    },
    helps={
        "profile": "Bench profile (default: seed, the seed guide's conditions).",
        "workload": opt.workload_help(
            "What the bench's requests are, as for `rigbook bench`",
            "a claim is compared only with a run of its own workload",
        ),
        "concurrency": "Levels, e.g. 1,4 (default: the claims' levels).",
        "max_tokens": "Reply length (default: the claims', else the profile's).",
    },
)
def reproduce(
    recipe: str = typer.Argument(..., help="A recipe: catalog slug, file or hub URL."),
    rig: Path = RigOption,
    gpus: str = GpusOption,
    port: str = PortOption,
    models_dir: Path = ModelsDirOption,
    drafter: str = DrafterOption,
    name: str = typer.Option(None, "--name", help="Name of the launch (default: the recipe slug)."),
    timeout: float = typer.Option(
        DEFAULT_READY_TIMEOUT, "--timeout", help="Seconds to wait for readiness."
    ),
    allow: list[str] = typer.Option(
        [], "--allow", help="Allow one dangerous option by name (repeatable), e.g. privileged."
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Do not ask for confirmation (for scripts)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the steps only (also RIGBOOK_DRY_RUN=1)."
    ),
    *,
    options: opt.BenchOptions,  # the bench options a reproduction takes, from MeasureRequest
    out: Path = typer.Option(
        None,
        "--out",
        help="Folder for the result, comparison and report (default: RIGBOOK_HOME/reproductions/…).",
    ),
    publish: bool = typer.Option(
        False,
        "--publish",
        help="Then publish the result and the verdict to --hub as a reproduction of the recipe.",
    ),
    hub: str = typer.Option(
        None, "--hub", help="The hub to publish to (with --publish), e.g. http://127.0.0.1:8080."
    ),
    token: str = typer.Option(
        None, "--token", envvar="RIGBOOK_HUB_TOKEN", help="API token (`rigbook hub token create`)."
    ),
    sign: bool = typer.Option(
        True,
        "--sign/--no-sign",
        help="Sign what --publish sends with the key under RIGBOOK_HOME when there is one.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Check, launch, smoke-test, bench under the claims' conditions with intervals, compare, stop;
    with --publish, send the result and the verdict to a hub."""
    from rigbook.reproduce.publish import publish_reproduction
    from rigbook.reproduce.render import render
    from rigbook.reproduce.run import ReproduceRequest
    from rigbook.reproduce.run import reproduce as run_reproduction

    dry = dry_run or dry_run_from_env()
    with handled(as_json):
        if publish and not hub:
            raise InputError(
                "E_INPUT",
                "--publish needs --hub: the hub to publish to",
                "Add --hub URL, e.g. --hub http://127.0.0.1:8080.",
            )
        if publish and not token:
            raise InputError(
                "E_INPUT",
                "--publish needs an API token; nothing was started",
                "Pass --token TOKEN or set RIGBOOK_HUB_TOKEN (`rigbook hub token create NAME`).",
            )
        # what the launch takes, named alike in the request and in make_plan
        launch: dict[str, Any] = dict(
            rig=rig,
            gpus=gpus,
            port=port,
            models_dir=models_dir,
            drafter=drafter,
            name=name,
            allow=allow,
            timeout=timeout,
        )
        request = options.request(
            ReproduceRequest, recipe=recipe, out_dir=out, unattended=yes and not dry, **launch
        )
        if dry:
            from rigbook.launch.api import make_plan

            _, made = make_plan(recipe, probe=False, dry_run=True, **launch)
            steps = _dry_run_steps(request)
            if publish:
                steps.append(
                    f"publish the result, then the verdict as a reproduction of the recipe, to {hub}"
                )

            def show() -> None:
                render_plan(made)
                for line in steps:
                    console.print(f"then: {line}", markup=False, highlight=False, soft_wrap=True)

            emit({"plan": made, "then": steps}, as_json, show)
            if made.blocking:
                raise typer.Exit(2)
            return

        def note(line: str) -> None:
            if not as_json:
                err_console.print(line, markup=False, highlight=False, soft_wrap=True)

        def on_live(live) -> None:
            if not as_json:
                render_live(live)

        live_progress = None
        if not as_json:
            from rigbook.bench.progress import LiveProgress

            live_progress = LiveProgress(enabled=True)
        signalled: list[int] = []

        def guard():
            from contextlib import contextmanager

            @contextmanager
            def inner():
                with _stop_on_signals() as stop:
                    if live_progress is not None:
                        with live_progress:
                            yield stop
                    else:
                        yield stop
                    if stop.signum is not None:
                        signalled.append(stop.signum)

            return inner()

        rep = run_reproduction(
            request,
            confirm=_confirmer(yes, as_json),
            note=note,
            on_live=on_live,
            bench_progress=live_progress.update if live_progress else None,
            bench_guard=guard,
        )
        if not publish or rep.verdict_error or signalled:
            emit(rep, as_json, lambda: render(rep, console))
        elif as_json:  # one JSON document: the reproduction and what the hub did with it
            done = publish_reproduction(rep, hub, token, signing=sign)
            emit(rep.model_dump(mode="json") | {"published": done.model_dump()}, True, lambda: None)
        else:
            render(rep, console)
            done = publish_reproduction(rep, hub, token, signing=sign)
            console.print(_published_line(done), markup=False, highlight=False, soft_wrap=True)
        if rep.verdict_error:
            err = RigbookError(rep.verdict_error["code"], rep.verdict_error["message"])
            if as_json:  # one JSON document on stdout: the error is inside it
                raise typer.Exit(err.exit_code)
            raise err
        if signalled:
            raise typer.Exit(128 + signalled[0])


def register(app: typer.Typer) -> None:
    """Add `reproduce` to the main app."""
    app.command("reproduce")(reproduce)
