"""`rigbook reproduce`: check, launch, smoke, bench under the claim's conditions, compare, stop.

The engine this run starts is stopped on every way out: success, a failure, or Ctrl-C at any
stage (during the launch, `rigbook.launch.run` stops it; after it, the ``finally`` here does).
Everything the run leaves is in one folder: the bench result and its journal, the comparison
with the claims, the report, and ``reproduction.json`` (this module's :class:`Reproduction`), so a
later publish can send them together.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.clients import ClientChoice
from rigbook.bench.measure import MeasureRequest, Progress, measure
from rigbook.bench.repeats import DEFAULT_MAX_REPEATS, DEFAULT_TARGET_PCT
from rigbook.bench.report import write_report
from rigbook.compare.sources import source_from_result
from rigbook.launch.plan import Plan
from rigbook.launch.planner import DEFAULT_READY_TIMEOUT
from rigbook.launch.run import UpResult
from rigbook.recipe.hash import recipe_hash
from rigbook.recipe.schema import Recipe
from rigbook.reproduce.claims import ClaimPlan, plan_claims
from rigbook.reproduce.verdict import contrast, overall, verdict_rows
from rigbook.reproduction import Reproduction

# Seconds one level's repeats may take before the cap ends them (its interval is reported either way).
DEFAULT_MAX_LEVEL_S = 300.0

Note = Callable[[str], None]


class ReproduceRequest(BaseModel):
    """One reproduction as a caller asks for it."""

    model_config = ConfigDict(extra="forbid")

    recipe: str = Field(description="A catalog slug, a recipe file or a hub URL.")
    out_dir: Path | None = Field(
        default=None,
        description="The folder for everything the run leaves; default under RIGBOOK_HOME.",
    )
    profile: str | None = Field(default=None, description="Bench profile; default seed.")
    workload: str = Field(
        default="prose",
        description="What the bench's requests are (rigbook.bench.workloads.sources); a trace is "
        "refused: it has no levels to repeat.",
    )
    dataset_size: int = Field(default=64, ge=1, description="dataset workloads: prompts sampled.")
    seed: int = Field(default=0, description="dataset workloads: the sample's seed.")
    min_prompt_chars: int = Field(default=1, ge=1)
    max_prompt_chars: int | None = Field(default=None, ge=1)
    concurrency: list[int] | None = Field(default=None, description="Default: the claims' levels.")
    max_tokens: int | None = Field(
        default=None, ge=1, description="Default: the claims' reply length."
    )
    requests: int | None = Field(default=None, ge=1, description="Requests per repeat of a level.")
    stall_timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds of silence that fail a request (the profile's)."
    )
    ci_target_pct: float = Field(default=DEFAULT_TARGET_PCT, gt=0)
    max_repeats: int = Field(default=DEFAULT_MAX_REPEATS, ge=3)
    max_level_s: float | None = Field(default=DEFAULT_MAX_LEVEL_S, gt=0)
    client: ClientChoice = "auto"
    rig: Path | None = None
    gpus: str | None = None
    port: str | None = None
    models_dir: Path | None = None
    drafter: str | None = None
    name: str | None = None
    allow: list[str] = Field(default_factory=list)
    timeout: float = DEFAULT_READY_TIMEOUT
    unattended: bool = Field(default=False, description="`--yes`: nothing is asked.")


@contextlib.contextmanager
def _plain_stop() -> Iterator[threading.Event]:
    yield threading.Event()


def default_folder(slug: str) -> Path:
    """Where a reproduction goes when the caller names no folder."""
    from rigbook.home import state_dir

    return state_dir("reproductions") / f"{slug}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def plan_reproduction(request: ReproduceRequest) -> tuple[Recipe, ClaimPlan]:
    """The recipe and what its reproduction measures; reads nothing but the recipe."""
    from rigbook.bench.plan import check_levels
    from rigbook.bench.workloads.sources import searchable
    from rigbook.recipe.resolve import resolve_recipe

    if request.concurrency is not None:
        check_levels(request.concurrency)
    searchable(request.workload, "reproduce")
    recipe = resolve_recipe(request.recipe)
    return recipe, plan_claims(
        recipe,
        request.recipe,
        profile=request.profile,
        levels=request.concurrency,
        max_tokens=request.max_tokens,
    )


def reproduce(
    request: ReproduceRequest,
    *,
    confirm: Callable[[Plan], bool],
    note: Note,
    on_live: Callable[[UpResult], None] | None = None,
    bench_progress: Progress | None = None,
    bench_guard: Callable[[], AbstractContextManager[threading.Event]] = _plain_stop,
) -> Reproduction:
    """Run the whole loop once. ``confirm`` sees the launch plan (its check findings and command)
    before anything starts; ``bench_guard`` gives the stop event the bench watches (the command
    line sets it from SIGINT/SIGTERM). A KeyboardInterrupt at any other time also stops the engine."""
    from rigbook.launch.api import up
    from rigbook.launch.control import down

    recipe, claims = plan_reproduction(request)
    folder = request.out_dir or default_folder(recipe.slug)
    folder.mkdir(parents=True, exist_ok=True)
    note(f"check and launch {recipe.slug}")
    live = up(
        request.recipe,
        confirm=confirm,
        progress=note,
        rig=request.rig,
        probe=True,
        unattended=request.unattended,
        timeout=request.timeout,
        gpus=request.gpus,
        port=request.port,
        models_dir=request.models_dir,
        drafter=request.drafter,
        name=request.name,
        allow=request.allow,
    )
    name = live.run.name if live.run else None
    try:
        if on_live:
            on_live(live)
        return _measure_and_compare(
            request, recipe, claims, live, folder, name, note, bench_progress, bench_guard
        )
    finally:
        if name:
            down(name)
            note(f"stopped {name}")


def _measure_and_compare(
    request: ReproduceRequest,
    recipe: Recipe,
    claims: ClaimPlan,
    live: UpResult,
    folder: Path,
    name: str | None,
    note: Note,
    bench_progress: Progress | None,
    bench_guard: Callable[[], AbstractContextManager[threading.Event]],
) -> Reproduction:
    result_path = folder / "result.json"
    note(
        f"bench: profile {claims.profile}, workload {request.workload}, concurrency {', '.join(str(c) for c in claims.levels)}, "
        f"{claims.max_tokens}-token replies, each level repeated until its 95 % interval is within "
        f"±{request.ci_target_pct:g} % (at most {request.max_repeats} repeats"
        + (f" or {request.max_level_s:g} s" if request.max_level_s else "")
        + ")"
    )
    with bench_guard() as stop:
        done = measure(
            MeasureRequest(
                url=live.url,
                model=live.model_id,
                profile=claims.profile,
                workload=request.workload,
                dataset_size=request.dataset_size,
                seed=request.seed,
                min_prompt_chars=request.min_prompt_chars,
                max_prompt_chars=request.max_prompt_chars,
                concurrency=claims.levels,
                max_tokens=claims.max_tokens,
                requests=request.requests,
                stall_timeout_s=request.stall_timeout_s,
                client=request.client,
                ci_target_pct=request.ci_target_pct,
                max_repeats=request.max_repeats,
                max_level_s=request.max_level_s,
                recipe=request.recipe,
                out=result_path,
            ),
            stop,
            progress=bench_progress,
        )
    result = done.result
    measured = source_from_result(str(result_path), result)
    rows, comparison = verdict_rows(result, measured, claims.claims)
    comparison_path = None
    if comparison is not None:
        comparison_path = folder / "comparison.json"
        comparison_path.write_text(comparison.model_dump_json(indent=2) + "\n", encoding="utf-8")
    report = write_report(result, folder / "report", "md")
    reproduction = Reproduction(
        recipe=recipe.slug,
        recipe_revision=recipe.revision.no if recipe.revision else None,
        recipe_hash=recipe_hash(recipe),
        folder=str(folder),
        url=live.url,
        model=live.model_id,
        launch=name,
        profile=claims.profile,
        levels=claims.levels,
        max_tokens=claims.max_tokens,
        ci_target_pct=request.ci_target_pct,
        assumed=claims.assumed,
        rows=rows,
        verdict=overall(rows),
        contrast=contrast(result),
        result=str(result_path),
        comparison=str(comparison_path) if comparison_path else None,
        report=str(report.report),
        cut_short=done.cut_short,
        verdict_error=done.verdict.error().to_dict() if done.verdict else None,
    )
    (folder / "reproduction.json").write_text(
        json.dumps(reproduction.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return reproduction
