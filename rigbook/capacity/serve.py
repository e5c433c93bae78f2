"""What a capacity run measures: a URL, or a recipe that is started when it is not running.

``serving(None, "SLUG")`` uses a running launch of the recipe when there is one; otherwise it
starts the recipe as `rigbook up SLUG --yes` would (same plan, same safety refusals), and stops
what it started when the block ends, also on an error or Ctrl-C. A launch that was already
running is left running.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from rigbook.endpoint.url import base_url

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


def _start(recipe, note: Note):
    """Start ``recipe`` as `rigbook up SLUG --yes`; returns the launch's state."""
    from rigbook.launch.planner import DEFAULT_READY_TIMEOUT, build_plan
    from rigbook.launch.run import run_plan
    from rigbook.rig.probe import probe_rig

    plan = build_plan(recipe, rig=probe_rig(), dry_run=False)

    def confirm(p) -> bool:
        if p.command is not None:
            note(f"starting {p.recipe} as {p.target.name}: $ {p.command.shown}")
        return True

    return run_plan(recipe, plan, confirm=confirm, progress=note, timeout=DEFAULT_READY_TIMEOUT)


@contextlib.contextmanager
def serving(url: str | None, recipe_ref: str | None, note: Note | None = None) -> Iterator[Served]:
    """The endpoint to measure; a launch started here is stopped on leaving."""
    say = note or (lambda _line: None)
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
        say(f"measuring the running launch {running.name} at {running.url}")
        yield Served(url=running.url, recipe=recipe_ref)
        return
    started = _start(recipe, say)
    name = started.run.name if started.run else None
    try:
        yield Served(url=started.url, recipe=recipe_ref, started=name)
    finally:
        if name:
            from rigbook.launch.control import down

            down(name)
            say(f"stopped {name}, which this run started")
