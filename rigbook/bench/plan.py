"""Resolve a bench request into one frozen :class:`RunPlan`, once, before any I/O.

Each ``resolve_*`` step fills one part of the plan from the request and the profile (the
workload, the levels, the mode, each cell's requests or seconds and processes, the client, the
recipe's facts). The runner executes the plan as it is and derives none of it again.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.client import Target
from rigbook.bench.clients import resolve
from rigbook.bench.profiles import Profile, get_profile
from rigbook.bench.repeats import DEFAULT_MAX_REPEATS, DEFAULT_TARGET_PCT, RepeatPolicy
from rigbook.bench.request import MeasureRequest, check_levels
from rigbook.bench.result import ProfileRef
from rigbook.bench.workers import cell_workers
from rigbook.bench.workloads.model import Workload, WorkloadRef
from rigbook.bench.workloads.sources import Resolved, resolve_workload
from rigbook.bench.workloads.trace import Trace
from rigbook.errors import InputError
from rigbook.openai.urls import base_url

Mode = Literal["burst", "sustained"]


class CellSpec(BaseModel):
    """One level's cell as it will run."""

    model_config = ConfigDict(frozen=True)

    concurrency: int
    requests: int | None = Field(description="Requests sent (burst and sessions); None: sustained.")
    duration_s: float | None = Field(description="Sustained: seconds of window; else None.")
    workers: int = Field(description="Processes its streams run in; 1: this process.")


class RecipeFacts(BaseModel):
    """What the recipe the server runs says about the run; all None when no recipe is named."""

    model_config = ConfigDict(frozen=True)

    slug: str | None = None
    revision: int | None = None
    engine: str | None = None
    engine_version: str | None = None
    extra: dict = Field(default_factory=dict, description="quant, speculative_method.")


class RunPlan(BaseModel):
    """One bench run, resolved: what the runner executes, with nothing left to default."""

    model_config = ConfigDict(frozen=True)

    url: str = Field(description="The base URL (a trailing /v1 dropped).")
    model: str | None = Field(description="The model asked for; None: the first served.")
    profile: Profile
    profile_ref: ProfileRef = Field(description="The profile as applied, with its overrides.")
    workload: Workload
    workload_ref: WorkloadRef
    trace: Trace | None = Field(description="trace workloads: the trace the one cell replays.")
    speed: float
    max_lag_ms: float
    prompts: tuple[str, ...]
    mode: Mode
    max_tokens: int
    warmup: int
    stall_s: float
    client: Literal["compiled", "python"] = Field(description="The client kind that streams.")
    cells: tuple[CellSpec, ...] = Field(
        description="One per level, in order; a trace: none (it replays in one cell)."
    )
    pool_workers: int = Field(description="Worker processes started for the run; 1: none.")
    repeat: RepeatPolicy | None = Field(description="Repeat each level's cell; None: run it once.")
    recipe: RecipeFacts
    out: Path


def repeat_policy(request: MeasureRequest) -> RepeatPolicy | None:
    """The repeat policy the request asks for, or None when it asks for none."""
    if (
        request.ci_target_pct is None
        and request.max_repeats is None
        and request.max_level_s is None
    ):
        return None
    return RepeatPolicy(
        target_pct=request.ci_target_pct or DEFAULT_TARGET_PCT,
        max_repeats=request.max_repeats or DEFAULT_MAX_REPEATS,
        max_level_s=request.max_level_s,
    )


def check_request(request: MeasureRequest) -> None:
    """``E_INPUT`` for values that exclude each other whatever the workload."""
    if request.requests is not None and request.duration_s is not None:
        raise InputError(
            "E_INPUT",
            "requests and duration exclude each other",
            "Use --requests N for burst mode or --duration S for sustained mode.",
        )
    if request.concurrency is not None:
        check_levels(request.concurrency)
    if request.workers is not None and request.workers < 1:
        raise InputError(
            "E_INPUT",
            f"workers {request.workers} is not a positive number of processes",
            "Write e.g. --workers 2, or leave it out for what the concurrency needs.",
        )


def check_workload(request: MeasureRequest, resolved: Resolved) -> None:
    """``E_INPUT`` for what the workload cannot run: a trace sets its own load in one cell;
    sessions have no sustained mode and need the Python client (it keeps each reply's text)."""
    workload = resolved.workload
    levelled = {
        "--concurrency": request.concurrency,
        "--requests": request.requests,
        "--duration": request.duration_s,
        "--ci-target": request.ci_target_pct,
        "--max-repeats": request.max_repeats,
        "--max-level-seconds": request.max_level_s,
    }
    if resolved.trace is not None and (given := [k for k, v in levelled.items() if v is not None]):
        raise InputError(
            "E_INPUT",
            f"{', '.join(given)} cannot go with a trace workload: the trace's arrival times set "
            "its load, in one cell",
            "Leave them out; --speed scales the trace's pace.",
        )
    if workload.sessions and request.duration_s is not None:
        raise InputError(
            "E_INPUT",
            f"workload {workload.name} runs sessions, which have no sustained mode",
            "Leave out --duration: a session cell runs each user's turns to their end.",
        )
    if workload.sessions and request.client == "compiled":
        raise InputError(
            "E_INPUT",
            f"workload {workload.name} runs sessions, which the compiled client cannot stream "
            "(it keeps no reply text for the next turn)",
            "Leave out --client (sessions take the Python client) or pass --client python.",
        )


def resolve_profile_ref(profile: Profile, request: MeasureRequest) -> ProfileRef:
    """The profile as applied, with any value the request changed listed as an override."""
    overrides: dict = {}
    for key, value in (
        ("concurrency", request.concurrency),
        ("max_tokens", request.max_tokens),
        ("requests_per_level", request.requests),
        ("duration_s", request.duration_s),
        ("warmup", request.warmup),
        ("stall_timeout_s", request.stall_timeout_s),
    ):
        default = getattr(profile, key, None)
        same = (
            list(value) == list(default)
            if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple))
            else value == default
        )
        if value is not None and not same:
            overrides[key] = value
    if request.duration_s is not None:
        overrides["mode"] = "sustained"
    named = {"name", "version", "temperature", "top_p", "thinking", "workload"}
    return ProfileRef(
        **profile.model_dump(include=named),
        content_hash=profile.content_hash(),
        max_tokens=request.max_tokens or profile.max_tokens,
        reply_length_held=profile.hold_length,
        overrides=overrides,
    )


def resolve_client(
    request: MeasureRequest, workload: Workload, url: str
) -> Literal["compiled", "python"]:
    """The client kind: sessions stream through the Python client, which keeps each reply's
    text for the next turn; else :func:`rigbook.bench.clients.resolve` (``E_BENCH_CLIENT`` for a
    client that cannot stream the endpoint)."""
    return "python" if workload.sessions else resolve(request.client, Target(url))


def resolve_cells(
    request: MeasureRequest, profile: Profile, workload: Workload, mode: Mode, levels: list[int]
) -> tuple[tuple[CellSpec, ...], int]:
    """Each level's cell, and how many worker processes the run starts (1: none). Worker
    processes start only when some cell needs more than this one (rigbook.bench.workers);
    sessions run in this process."""
    wanted = [cell_workers(c, request.workers) for c in levels]
    pool = 1 if workload.sessions or not wanted else max(wanted)
    cells = []
    for conc, workers in zip(levels, wanted, strict=True):
        if workload.sessions:  # every user's every turn
            requests: int | None = conc * workload.turns
        elif mode == "burst":
            requests = max(request.requests or profile.requests_per_level, conc)
        else:
            requests = None
        cells.append(
            CellSpec(
                concurrency=conc,
                requests=requests,
                duration_s=(request.duration_s or profile.duration_s)
                if mode == "sustained"
                else None,
                workers=workers if pool > 1 else 1,
            )
        )
    return tuple(cells), pool


def resolve_recipe_facts(ref: str | None) -> RecipeFacts:
    """What the named recipe says about the run: its revision, engine and stated conditions."""
    if ref is None:
        return RecipeFacts()
    from rigbook.recipe.resolve import resolve_recipe
    from rigbook.recipe.speculator import speculator

    recipe = resolve_recipe(ref)
    extra = {}
    quant = next((m.quant for m in recipe.models if m.quant), None)
    if quant:
        extra["quant"] = quant
    drafter = speculator(recipe)  # its block, else what its launch states
    if drafter and drafter.method:
        extra["speculative_method"] = drafter.method
    source = recipe.engine_source
    return RecipeFacts(
        slug=ref,
        revision=recipe.revision.no if recipe.revision else None,
        engine=recipe.engine,
        engine_version=source.base_version if source else None,
        extra=extra,
    )


def default_out() -> Path:
    """Where a result goes when the caller names no file."""
    from rigbook.home import state_dir

    return state_dir("results") / f"bench-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"


def resolve_plan(request: MeasureRequest) -> RunPlan:
    """The request resolved into the plan the runner executes; bad input is ``E_INPUT`` (or
    ``E_BENCH_CLIENT``) here, before any I/O."""
    check_request(request)
    resolved = resolve_workload(
        request.workload,
        speed=request.speed,
        block_tokens=request.block_tokens,
        dataset_size=request.dataset_size,
        seed=request.seed,
        min_prompt_chars=request.min_prompt_chars,
        max_prompt_chars=request.max_prompt_chars,
    )
    check_workload(request, resolved)
    workload = resolved.workload
    url = base_url(request.url)
    client = resolve_client(request, workload, url)
    profile = get_profile(request.profile)
    mode: Mode = "sustained" if request.duration_s is not None else profile.mode
    # A trace replay is one cell whose load the trace sets: no levels, no worker processes.
    levels = [] if resolved.trace is not None else request.concurrency or list(profile.concurrency)
    cells, pool = resolve_cells(request, profile, workload, mode, levels)
    return RunPlan(
        url=url,
        model=request.model,
        profile=profile,
        profile_ref=resolve_profile_ref(profile, request),
        workload=workload,
        workload_ref=workload.ref(),
        trace=resolved.trace,
        speed=request.speed,
        max_lag_ms=request.max_lag_ms,
        prompts=resolved.prompts or tuple(profile.prompts()),
        mode=mode,
        max_tokens=request.max_tokens or profile.max_tokens,
        warmup=request.warmup if request.warmup is not None else profile.warmup,
        stall_s=request.stall_timeout_s or profile.stall_timeout_s,
        client=client,
        cells=cells,
        pool_workers=pool,
        repeat=repeat_policy(request),
        recipe=resolve_recipe_facts(request.recipe),
        out=request.out or default_out(),
    )
