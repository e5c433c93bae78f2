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
from pathlib import Path

from pydantic import BaseModel, Field

from rigbook.bench.request import MeasureRequest
from rigbook.bench.result import BenchResult
from rigbook.bench.workers import Ceiling, ceiling
from rigbook.errors import RigbookError

# progress(event, data): "cell" {index, concurrency, total}, "request" {record}, "cell_done" {cell}
Progress = Callable[[str, dict], None]

# How often the run looks at a threading.Event stop: the bound on how late a signal is heard.
# Each look wakes the event loop and costs it CPU (benchmarks/scripts/client/tick_cost.py measures
# a wake-up): a few looks a second keep that small beside the loop's own cost per token, while a
# signal is still heard within a quarter of a second.
_STOP_POLL_S = 0.25


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
    client_ceiling: Ceiling | None = Field(
        default=None, description="The client's ceiling from the result's cells (None: no token)."
    )


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
    from rigbook.bench.plan import resolve_plan
    from rigbook.bench.runner import run_bench

    plan = resolve_plan(request)
    target = plan.out
    rig, rig_why, sampler = _rig_and_sampler(plan.url, request.telemetry)
    result = await run_bench(
        plan,
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
        client_ceiling=ceiling(result.cells),
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
