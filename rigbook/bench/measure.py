"""`rigbook.bench.measure`: the library entry point of a bench run.

It owns every decision the command line used to make: whether the endpoint runs on
this machine (and so whether this machine's rig and GPU telemetry describe it), where
the result goes, and the verdict (``E_BENCH_INVALID`` when a cell had failed requests).
It installs no signal handlers: the caller passes a stop event and sets it (the CLI
does so from its SIGINT/SIGTERM handlers).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.client import Target
from rigbook.bench.clients import ClientChoice, resolve
from rigbook.bench.repeats import DEFAULT_MAX_REPEATS, DEFAULT_TARGET_PCT, RepeatPolicy
from rigbook.bench.result import BenchResult
from rigbook.errors import InputError, RigbookError

# progress(event, data): "cell" {index, concurrency, total}, "request" {record}, "cell_done" {cell}
Progress = Callable[[str, dict], None]

# How often the run looks at a threading.Event stop: the bound on how late a signal is heard.
# Each look wakes the event loop and costs it CPU (benchmarks/scripts/client/tick_cost.py measures
# a wake-up): a few looks a second keep that small beside the loop's own cost per token, while a
# signal is still heard within a quarter of a second.
_STOP_POLL_S = 0.25


class MeasureRequest(BaseModel):
    """One bench run as a caller asks for it; unset values take the profile's."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        description="Base URL of an OpenAI-compatible server (a trailing /v1 is dropped)."
    )
    model: str | None = Field(
        default=None, description="Model id; default: the first the server lists."
    )
    profile: str = "seed"
    workload: str = Field(
        default="prose",
        description="What the requests are: a workload name, or NAME@VERSION "
        "(rigbook.bench.workloads); prose is the seed's method.",
    )
    concurrency: list[int] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    requests: int | None = Field(default=None, ge=1, description="Burst mode: requests per level.")
    duration_s: float | None = Field(
        default=None, gt=0, description="Sustained mode: seconds per level."
    )
    warmup: int | None = Field(default=None, ge=0)
    stall_timeout_s: float | None = Field(default=None, gt=0)
    workers: int | None = Field(
        default=None,
        description="Processes a cell's streams run in; default: one per 256 streams, at most "
        "the usable CPUs (rigbook.bench.workers). 1 keeps every stream in this process.",
    )
    client: ClientChoice = Field(
        default="auto",
        description="Which client streams the requests: compiled (a reader thread in C with the "
        "kernel's receive stamps), python (asyncio, stamped at each read), or auto: compiled "
        "where it was built and the endpoint is plain HTTP.",
    )
    ci_target_pct: float | None = Field(
        default=None,
        gt=0,
        description="Repeat each level's cell (whole waves) until the 95 % confidence interval of "
        "its aggregate and median per-request rate is within this many percent of the mean; "
        "default: run each level once, with no interval.",
    )
    max_repeats: int | None = Field(
        default=None,
        ge=3,
        description="Cap on a level's repeats (default 10); implies a CI target.",
    )
    max_level_s: float | None = Field(
        default=None, gt=0, description="Cap on a level's seconds of repeats; implies a CI target."
    )
    recipe: str | None = Field(default=None, description="Recipe slug or file the server runs.")
    out: Path | None = Field(
        default=None, description="Result file; default RIGBOOK_HOME/results/bench-<time>.json."
    )
    telemetry: bool = Field(
        default=True, description="Read the rig and GPU telemetry when the endpoint is local."
    )
    # trace and dataset workloads (rigbook.bench.workloads.sources)
    speed: float = Field(default=1.0, gt=0, description="trace: arrival times are divided by this.")
    max_lag_ms: float = Field(
        default=50.0, gt=0, description="trace: the p99 schedule lag past which W_TRACE_LAG is due."
    )
    block_tokens: int | None = Field(
        default=None, ge=1, description="trace: tokens per shared block; default Mooncake's 512."
    )
    dataset_size: int = Field(default=64, ge=1, description="dataset: prompts sampled.")
    seed: int = Field(default=0, description="dataset: the sample's seed.")
    min_prompt_chars: int = Field(default=1, ge=1, description="dataset: shorter prompts dropped.")
    max_prompt_chars: int | None = Field(
        default=None, ge=1, description="dataset: longer prompts dropped."
    )


class Verdict(BaseModel):
    """Why a finished run does not count: the code, the message and one line per failure."""

    code: str
    message: str
    details: list[str] = Field(default_factory=list)

    def error(self) -> RigbookError:
        """The verdict as the error a command exits with."""
        return RigbookError(self.code, self.message, details=self.details)


class Measurement(BaseModel):
    """What :func:`measure` gives back: the result, where it and its journal went, the verdict."""

    result: BenchResult
    result_path: Path
    journal_path: Path
    verdict: Verdict | None = Field(default=None, description="Set when the run does not count.")
    cut_short: bool = Field(
        default=False,
        description="The stop event ended the run early: the result holds what was measured "
        "(W_CUT_SHORT) and is not whole; the command line exits 128 + the signal.",
    )


def check_levels(levels: list[int]) -> list[int]:
    """The levels, or ``E_INPUT`` for an empty list, a level below 1 or above the cap."""
    from rigbook.bench.scheduler import MAX_CONCURRENCY

    if not levels or any(c < 1 for c in levels):
        raise InputError(
            "E_INPUT",
            f"concurrency {levels!r} is not a list of positive integers",
            "Write e.g. --concurrency 1,4,8.",
        )
    if max(levels) > MAX_CONCURRENCY:
        raise InputError(
            "E_INPUT",
            f"concurrency {max(levels)} is more streams than a bench holds "
            f"(at most {MAX_CONCURRENCY})",
            "Use fewer; `make bench-client` shows where this machine's client "
            "becomes the bottleneck.",
        )
    return levels


def _recipe_facts(ref: str | None) -> dict:
    """What the named recipe says about the run: its revision, engine and stated conditions."""
    if ref is None:
        return {}
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
    return {
        "recipe_revision": recipe.revision.no if recipe.revision else None,
        "extra": extra,
        "recipe_engine": recipe.engine,
        "recipe_engine_version": source.base_version if source else None,
    }


def _rig_and_sampler(url: str, telemetry: bool):
    """The rig summary and telemetry sampler, or why neither describes the endpoint's machine."""
    from rigbook.bench.telemetry import Sampler, open_reader
    from rigbook.endpoint.local import is_local
    from rigbook.rig.probe import probe_rig

    if not telemetry:
        why = "telemetry off for this run"
        return None, why, Sampler(None, why)
    if not is_local(url):
        why = f"the endpoint is on another host ({url}): this machine's GPUs say nothing about it"
        return None, why, Sampler(None, why)
    try:
        rig, rig_why = probe_rig().summary(), None
    except (RigbookError, OSError) as exc:  # a failed probe must not stop a bench; it is recorded
        rig, rig_why = None, f"{type(exc).__name__}: {exc}"
    reader, reader_why = open_reader()
    return rig, rig_why, Sampler(reader, reader_why)


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


def default_out() -> Path:
    """Where a result goes when the caller names no file."""
    from rigbook.home import state_dir

    return state_dir("results") / f"bench-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"


def _warmup_code(error: str) -> str:
    """The code one failed warmup request points to: refused (``E_CONNECT``), an HTTP error
    (``E_HTTP``), a reply that is no event stream to time (``E_STREAM_FORMAT``), or a 200 whose
    stream then failed (``E_ENGINE_ERROR``)."""
    if error.startswith("connect"):
        return "E_CONNECT"
    if error.startswith("stream_format"):
        return "E_STREAM_FORMAT"
    return "E_HTTP" if error.startswith("http_") else "E_ENGINE_ERROR"


def verdict_of(result: BenchResult, path: Path) -> Verdict | None:
    """Why the run does not count, or None: a warmup that never succeeded (and was not cut short
    by the stop event) is ``E_CONNECT``, ``E_HTTP`` or (the server answered 200, then failed the
    stream) ``E_ENGINE_ERROR``, after the last request when they failed in several ways; a cell not
    cut short with failed requests is ``E_BENCH_INVALID``."""
    if result.warmup and not result.cells and not result.conditions.cut_short:
        # Failures of one kind name it; a mix (a server still starting: refused, then 503) is
        # named by the last, the server's latest state.
        kinds = [_warmup_code(r.error or "") for r in result.warmup]
        code = kinds[0] if len(set(kinds)) == 1 else kinds[-1]
        return Verdict(
            code=code,
            message=f"every warmup request failed; nothing was measured "
            f"(result and journal written to {path})",
            details=[f"warmup request {r.index}: {r.error}" for r in result.warmup],
        )
    invalid = [c for c in result.cells if not c.valid and not c.cut_short]
    if not invalid:
        return None
    return Verdict(
        code="E_BENCH_INVALID",
        message=f"{len(invalid)} of {len(result.cells)} cells had failed requests "
        f"(result written to {path})",
        details=[
            f"cell {c.index} (concurrency {c.concurrency}): {r}"
            for c in invalid
            for r in c.invalid_reasons
        ],
    )


async def measure_async(
    request: MeasureRequest, stop: asyncio.Event | None = None, progress: Progress | None = None
) -> Measurement:
    """Run a bench inside the caller's event loop; setting ``stop`` (an asyncio.Event) ends it
    early, keeping what was measured (``cut_short``)."""
    from rigbook.bench.journal import journal_path
    from rigbook.bench.profiles import get_profile
    from rigbook.bench.runner import BenchSpec, run_bench
    from rigbook.bench.workloads.sources import resolve_workload
    from rigbook.openai.urls import base_url

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
    resolved = resolve_workload(
        request.workload,
        speed=request.speed,
        block_tokens=request.block_tokens,
        dataset_size=request.dataset_size,
        seed=request.seed,
        min_prompt_chars=request.min_prompt_chars,
        max_prompt_chars=request.max_prompt_chars,
    )
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
    url = base_url(request.url)
    resolve(request.client, Target(url))  # a client that cannot stream it: say so before any I/O
    target = request.out or default_out()
    spec = BenchSpec(
        url=url,
        model=request.model,
        profile=get_profile(request.profile),
        workload=resolved.workload,
        trace=resolved.trace,
        speed=request.speed,
        max_lag_ms=request.max_lag_ms,
        prompts=resolved.prompts,
        concurrency=request.concurrency,
        max_tokens=request.max_tokens,
        requests=request.requests,
        duration_s=request.duration_s,
        warmup=request.warmup,
        stall_timeout_s=request.stall_timeout_s,
        workers=request.workers,
        client=request.client,
        repeat=repeat_policy(request),
        recipe_slug=request.recipe,
        out=target,
        **_recipe_facts(request.recipe),
    )
    rig, rig_why, sampler = _rig_and_sampler(url, request.telemetry)
    result = await run_bench(
        spec,
        rig=rig,
        rig_unavailable=rig_why,
        sampler=sampler,
        progress=progress,
        stop=stop or asyncio.Event(),
    )
    return Measurement(
        result=result,
        result_path=target,
        journal_path=journal_path(target),
        verdict=verdict_of(result, target),
        cut_short=result.conditions.cut_short,
    )


def measure(
    request: MeasureRequest, stop: threading.Event | None = None, progress: Progress | None = None
) -> Measurement:
    """Run a bench to the end in a fresh event loop and return what it measured.

    ``stop`` is a ``threading.Event`` so a signal handler, another thread or a test can set it;
    the run notices within 250 ms, stops its streams and writes the result marked cut short.
    Bad input raises a coded :class:`~rigbook.errors.RigbookError`; failed requests do not raise,
    they set ``verdict``.
    """

    async def run() -> Measurement:
        inner = asyncio.Event()
        watcher = asyncio.create_task(_watch(stop, inner)) if stop is not None else None
        try:
            return await measure_async(request, inner, progress)
        finally:
            if watcher:
                watcher.cancel()

    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(run())


def loop_factory():
    """uvloop's event loop where it is installed (its reads and timers cost less per token),
    else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _watch(stop: threading.Event, inner: asyncio.Event) -> None:
    while not stop.is_set():
        await asyncio.sleep(_STOP_POLL_S)
    inner.set()
