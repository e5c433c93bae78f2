"""`rigbook capacity` as a library call: search an endpoint, write the result after every probe."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from rigbook.endpoint.local import is_local
from rigbook.bench.runner import BenchSpec
from rigbook.bench.telemetry import Sampler, open_reader
from rigbook.capacity.answer import decide, users, users_point
from rigbook.capacity.probe import Progress, open_prober
from rigbook.capacity.result import CapacityResult, save_capacity
from rigbook.capacity.search import ProbeOutcome, SearchSettings, search
from rigbook.capacity.slo import Slo
from rigbook.rig.model import RigSummary


class CapacitySpec(BaseModel):
    """One capacity run: the endpoint and profile (as for a bench), the SLO and the search."""

    model_config = ConfigDict(frozen=True)

    bench: BenchSpec
    slo: Slo
    settings: SearchSettings = SearchSettings()


def machine_context(url: str) -> tuple[RigSummary | None, str | None, Sampler]:
    """This machine's rig summary and a telemetry sampler, only when the endpoint runs here:
    another host's numbers must not carry this machine's GPUs."""
    if not is_local(url):
        why = f"the endpoint is on another host ({url}): this machine's GPUs say nothing about it"
        return None, why, Sampler(None, why)
    from rigbook.rig.probe import probe_rig

    try:
        rig, rig_why = probe_rig().summary(), None
    except Exception as exc:  # noqa: BLE001 - a failed probe must not stop a measurement; it is recorded
        rig, rig_why = None, f"{type(exc).__name__}: {exc}"
    reader, why = open_reader()
    return rig, rig_why, Sampler(reader, why)


def _load() -> str | None:
    try:
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return None


def build_result(spec: CapacitySpec, outcomes: list[ProbeOutcome], bench) -> CapacityResult:
    """The result the probes so far support."""
    answer = decide(spec.slo, spec.settings, outcomes, bench)
    point = users_point(spec.slo, answer, bench, spec.bench.extra)
    warnings = list(bench.warnings)
    if answer.lower_bound:
        warnings.append(f"W_CAPACITY_LOWER_BOUND: {answer.lower_bound_why}")
    if answer.unstable:
        refuted = [o for o in outcomes if o.purpose == "rerun" and o.verdict == "fail"]
        warnings.append("W_CAPACITY_UNSTABLE: a boundary re-run failed at "
                        + ", ".join(users(o.concurrency) for o in refuted))
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
    rig: RigSummary | None,
    rig_unavailable: str | None,
    sampler: Sampler,
    stop: asyncio.Event,
    progress: Progress | None = None,
    on_probe: Callable[[ProbeOutcome], None] | None = None,
) -> CapacityResult:
    """Search, writing ``spec.bench.out`` after every probe; ``stop`` ends the search between or
    inside probes (what was measured is kept and the answer says it is incomplete)."""
    out = spec.bench.out
    async with open_prober(
        spec.bench,
        max_concurrency=spec.settings.max_concurrency,
        rig=rig,
        rig_unavailable=rig_unavailable,
        sampler=sampler,
        stop=stop,
        progress=progress,
    ) as prober:
        outcomes: list[ProbeOutcome] = []

        def after_probe(outcome: ProbeOutcome) -> None:
            outcomes.append(outcome)
            save_capacity(build_result(spec, outcomes, prober.result()), out)
            if on_probe:
                on_probe(outcome)

        await search(prober, spec.slo, spec.settings, after_probe)
        result = build_result(spec, outcomes, prober.result()).with_hash()
    save_capacity(result, out)
    return result
