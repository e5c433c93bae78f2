"""Run a capacity search against a synthetic server that serves a known curve."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rigbook.bench import MeasureRequest
from rigbook.capacity import CapacityResult, CapacitySpec, SearchSettings, parse_slo, run_capacity
from rigbook_testkit.synthetic_curves import Curve
from tests.bench.helpers import start_synthetic

# 30-token replies, 3 tokens a chunk: at ~100 tok/s a request takes 0.3 s, long enough that
# the server's timer jitter moves a rate by well under the margins the curves leave.
MAX_TOKENS = 30


def serve(curve: Curve):
    """The synthetic server serving ``curve``, as its own process: (process, URL)."""
    return start_synthetic("--curve", curve.model_dump_json())


def capacity(
    url: str,
    out: Path,
    slo: str,
    stop_after: int | None = None,
    warmup: int = 0,
    stall_timeout_s: float | None = None,
    **settings,
) -> CapacityResult:
    """Search ``url`` at ``slo``; two requests per user, at least five a probe (what a median
    asks for), and one boundary re-run unless told. ``stop_after``: set the stop event (as
    Ctrl-C does) once that many probes have ended."""
    settings = {"rounds": 2, "reruns": 1, "min_requests": 5, **settings}
    spec = CapacitySpec(
        slo=parse_slo(slo),
        settings=SearchSettings(**settings),
        measure=MeasureRequest(
            url=url,
            model="synthetic",
            profile="quick",
            max_tokens=MAX_TOKENS,
            warmup=warmup,
            stall_timeout_s=stall_timeout_s,
            telemetry=False,
        ),
        out=out,
    )

    async def go() -> CapacityResult:
        stop, ended = asyncio.Event(), []

        def on_probe(outcome) -> None:
            ended.append(outcome)
            if len(ended) == stop_after:
                stop.set()

        return await run_capacity(spec, stop=stop, on_probe=on_probe)

    return asyncio.run(go())
