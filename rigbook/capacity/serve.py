"""What a capacity run measures: a URL, or a recipe that is started when it is not running.

``serving(None, "SLUG")`` uses a running launch of the recipe when there is one; otherwise it
starts the recipe as `rigbook up SLUG --yes [--port PORT]` would (same plan, same safety refusals), and stops
what it started when the block ends, also on an error or Ctrl-C. A launch that was already
running is left running.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rigbook.openai.urls import base_url

Note = Callable[[str], None]


class Served(BaseModel):
    """The endpoint a run measures, and the recipe it serves (recorded with every probe)."""

    model_config = ConfigDict(frozen=True)

    url: str
    recipe: str | None = Field(default=None, description="The recipe as named (slug or file).")
    started: str | None = Field(default=None, description="Name of the launch this run started.")


def _running_launch(slug: str):
    from rigbook.launch import state

    return next((r for r in state.all_runs() if r.recipe == slug and r.alive), None)


def _start(recipe, note: Note, port: int | None = None, models_dir: Path | None = None):
    """Start ``recipe`` as `rigbook up SLUG --yes [--port PORT]`; returns the launch's state."""
    from rigbook.launch.planner import DEFAULT_READY_TIMEOUT, build_plan
    from rigbook.launch.run import run_plan
    from rigbook.rig.probe import probe_rig

    plan = build_plan(recipe, rig=probe_rig(), port=port, models_dir=models_dir, dry_run=False)

    def confirm(p) -> bool:
        if p.command is not None:
            note(f"starting {p.recipe} as {p.target.name}: $ {p.command.shown}")
        return True

    return run_plan(plan, confirm=confirm, progress=note, timeout=DEFAULT_READY_TIMEOUT)


@contextlib.contextmanager
def serving(
    url: str | None,
    recipe_ref: str | None,
    note: Note | None = None,
    port: int | None = None,
    models_dir: Path | None = None,
) -> Iterator[Served]:
    """The endpoint to measure; a launch started here (on ``port``, else the recipe's, with its
    weights under ``models_dir``, else RIGBOOK_HOME/models) is stopped on leaving."""
    say = note or (lambda _line: None)
    given = [n for n, v in (("--port", port), ("--models-dir", models_dir)) if v is not None]
    if given and (recipe_ref is None or url is not None):
        from rigbook.errors import InputError

        raise InputError(
            "E_INPUT",
            f"{' and '.join(given)}: how a recipe is started; it goes with --recipe and no URL",
            f"Drop {' and '.join(given)}, or give --recipe SLUG instead of the URL.",
        )
    if recipe_ref is None:
        assert url is not None, "serving needs a URL or a recipe"  # the CLI refuses neither
        yield Served(url=base_url(url))
        return
    from rigbook.recipe.resolve import resolve_recipe

    recipe = resolve_recipe(recipe_ref)
    if url is not None:
        yield Served(url=base_url(url), recipe=recipe_ref)
        return
    running = _running_launch(recipe.slug)
    if running is not None:
        if port is not None and running.port != port:
            say(f"--port {port} not used: the recipe already runs on port {running.port}")
        say(f"measuring the running launch {running.name} at {running.url}")
        yield Served(url=running.url, recipe=recipe_ref)
        return
    started = _start(recipe, say, port, models_dir)
    name = started.run.name if started.run else None
    try:
        yield Served(url=started.url, recipe=recipe_ref, started=name)
    finally:
        if name:
            from rigbook.launch.control import down

            down(name)
            say(f"stopped {name}, which this run started")
