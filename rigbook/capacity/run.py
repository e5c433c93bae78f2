"""`rigbook capacity` as a library call: search an endpoint, write the result after every probe."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rigbook.bench import MeasureRequest
from rigbook.bench.measure import loop_factory
from rigbook.capacity.answer import decide, levels, users, users_point
from rigbook.capacity.drain import IdleWait
from rigbook.capacity.probe import BenchProber, Progress
from rigbook.capacity.result import CapacityResult, save_capacity
from rigbook.capacity.search import ProbeOutcome, SearchSettings, search
from rigbook.capacity.slo import Slo
from rigbook.findings import Finding

# How often a threading.Event stop is looked at: the bound on how late a signal is heard.
_STOP_POLL_S = 0.05
# The stall limit is at least this many times the SLO's loosest TTFT bound: a first token slower
# than the bound is then read as a TTFT miss, with its value, not as a failed request.
STALL_PER_TTFT = 2.0


class CapacitySpec(BaseModel):
    """One capacity run: the endpoint and profile as for a bench (``measure``: each probe is
    that request at one concurrency), the SLO, the search, and where the result goes."""

    model_config = ConfigDict(frozen=True)

    measure: MeasureRequest
    slo: Slo
    settings: SearchSettings = SearchSettings()
    out: Path


def recipe_extra(ref: str | None) -> dict:
    """What the recipe states that a perf point carries (its quant), as a bench's points do."""
    if ref is None:
        return {}
    from rigbook.recipe.resolve import resolve_recipe

    quant = next((m.quant for m in resolve_recipe(ref).models if m.quant), None)
    return {"quant": quant} if quant else {}


def stall_for(slo: Slo, measure: MeasureRequest) -> float:
    """The stall limit a capacity run uses: the one asked for (or the profile's), raised to
    ``STALL_PER_TTFT`` times the SLO's loosest TTFT bound, so a first token the SLO allows never
    fails its request."""
    from rigbook.bench.profiles import get_profile

    given = measure.stall_timeout_s or get_profile(measure.profile).stall_timeout_s
    ttft = [t.threshold / 1000.0 for t in slo.terms if t.name.startswith("ttft_")]
    return max([given, *(STALL_PER_TTFT * b for b in ttft)])


def _load() -> str | None:
    try:
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return None


def build_result(
    spec: CapacitySpec, outcomes: list[ProbeOutcome], prober: BenchProber
) -> CapacityResult:
    """The result the probes so far support."""
    bench = prober.result()
    answer = decide(spec.slo, spec.settings, outcomes, bench)
    point = users_point(spec.slo, answer, bench, prober.extra)
    warnings = list(bench.warnings)
    if prober.stop.is_set():
        finished = sum(o.verdict != "stopped" for o in outcomes)
        # The run as a whole was cut short (Ctrl-C, SIGTERM): said once for the search, whether
        # the signal came inside a probe (whose own W_CUT_SHORT is above, with its number) or
        # between two, where no probe's bench saw it.
        warnings.insert(
            0,
            Finding.make(
                "W_CUT_SHORT",
                f"stopped by a signal after {finished} finished probe(s); the result holds what "
                "was measured and the answer is a lower bound",
            ),
        )
    if answer.lower_bound_why is not None:
        warnings.append(Finding.make("W_CAPACITY_LOWER_BOUND", answer.lower_bound_why))
    if answer.unstable:
        refuted = [o for o in outcomes if o.purpose == "rerun" and o.verdict == "fail"]
        rests = (
            ""
            if answer.confirmed
            else f"; the answer rests on {len(answer.boundary_cells)} run(s) of "
            f"{users(answer.users)}"
        )
        warnings.append(
            Finding.make(
                "W_CAPACITY_UNSTABLE",
                "a boundary re-run failed at "
                + ", ".join(users(o.concurrency) for o in refuted)
                + rests,
            )
        )
    warnings += [Finding.make("W_CAPACITY_FEW_REQUESTS", note) for note in answer.few_requests]
    if answer.unprobed:
        warnings.append(
            Finding.make(
                "W_CAPACITY_UNPROBED",
                f"levels below {users(answer.users)} never probed: {levels(answer.unprobed)} "
                f"(the answer assumes they hold; --checks {spec.settings.checks} were used)",
            )
        )
    for o in outcomes:
        if o.drain is not None and o.drain.idle is False and o.verdict != "stopped":
            warnings.append(
                Finding.make(
                    "W_CAPACITY_NOT_IDLE",
                    f"probe {o.cell + 1} began with requests still in flight after "
                    f"{o.drain.waited_s:.1f} s ({o.drain.source})",
                )
            )
    return CapacityResult(
        slo=spec.slo,
        settings=spec.settings,
        probes=outcomes,
        answer=answer,
        perf_points=[point] if point else [],
        bench=bench,
        warnings=warnings,
        load=_load(),
    )


async def run_capacity(
    spec: CapacitySpec,
    *,
    stop: asyncio.Event,
    progress: Progress | None = None,
    on_probe: Callable[[ProbeOutcome], None] | None = None,
) -> CapacityResult | None:
    """Search, writing ``spec.out`` after every probe (and each probe's own bench result and
    journal beside it); ``stop`` ends the search between or inside probes: what was measured is
    kept and the answer says it is incomplete (None when it was stopped before any probe
    measured a request, and nothing was written)."""
    from rigbook.openai.urls import base_url

    measure = spec.measure.model_copy(update={"stall_timeout_s": stall_for(spec.slo, spec.measure)})
    idle = IdleWait(base_url(measure.url), spec.settings.drain_s, spec.settings.drain_timeout_s)
    prober = BenchProber(measure, spec.out, stop, recipe_extra(measure.recipe), idle, progress)
    outcomes: list[ProbeOutcome] = []

    def after_probe(outcome: ProbeOutcome) -> None:
        if len(prober.files) > len(outcomes):
            i = len(outcomes)
            outcome = outcome.model_copy(
                update={"result_file": prober.files[i], "drain": prober.drains[i]}
            )
        outcomes.append(outcome)
        if prober.results:
            save_capacity(build_result(spec, outcomes, prober), spec.out)
        if on_probe:
            on_probe(outcome)

    await search(prober, spec.slo, spec.settings, after_probe)
    if not prober.results:  # stopped before the first probe measured anything: no file
        return None
    result = build_result(spec, outcomes, prober).with_hash()
    save_capacity(result, spec.out)
    return result


def capacity(
    spec: CapacitySpec,
    stop: threading.Event | None = None,
    progress: Progress | None = None,
    on_probe: Callable[[ProbeOutcome], None] | None = None,
) -> CapacityResult | None:
    """:func:`run_capacity` to the end in a fresh event loop (uvloop where installed). ``stop`` is
    a ``threading.Event`` so a signal handler or another thread can end the search."""

    async def run() -> CapacityResult | None:
        inner = asyncio.Event()

        async def follow() -> None:
            while stop is not None and not stop.is_set():
                await asyncio.sleep(_STOP_POLL_S)
            if stop is not None:
                inner.set()

        follower = asyncio.create_task(follow())
        try:
            return await run_capacity(spec, stop=inner, progress=progress, on_probe=on_probe)
        finally:
            follower.cancel()

    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(run())
