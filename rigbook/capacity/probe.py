"""Probes as bench cells: one client, one journal and the bench's own cell code for every probe.

Each probe is a normal burst cell of one bench run (same profile, validity rules, client-bound
detection, journal line per request), so the probes of a capacity search together are a bench
result that `rigbook report` and `rigbook compare` read like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import httpx

from rigbook import __version__
from rigbook.bench.assemble import assemble
from rigbook.bench.backend import chat_payload, stream_chat
from rigbook.endpoint.discover import discover
from rigbook.bench.journal import Journal, journal_path
from rigbook.bench.result import BenchResult, Cell, Conditions
from rigbook.bench.runner import BenchSpec, _measure_cell, _now_iso, _warmup, profile_ref
from rigbook.bench.telemetry import Sampler
from rigbook.capacity.search import ProbePlan, Watch
from rigbook.errors import EndpointError
from rigbook.rig.model import RigSummary

# progress(event, data), as the bench runner calls it: "cell", "request", "cell_done".
Progress = Callable[[str, dict], None]


class BenchProber:
    """The :class:`~rigbook.capacity.search.Probe` over a live endpoint."""

    def __init__(
        self,
        spec: BenchSpec,
        client: httpx.AsyncClient,
        cond: Conditions,
        journal: Journal,
        sampler: Sampler,
        stop: asyncio.Event,
        progress: Progress | None,
    ) -> None:
        self.spec, self.client, self.conditions = spec, client, cond
        self.journal, self.sampler, self.stop, self.progress = journal, sampler, stop, progress
        self.cells: list[Cell] = []
        self.warnings: list[str] = []
        self._prompts = spec.profile.prompts()

    async def send(self, i: int, raw) -> None:
        p = self.spec.profile
        body = chat_payload(
            p,
            self.conditions.model,
            self._prompts[i % len(self._prompts)],
            self.spec.max_tokens or p.max_tokens,
        )
        await stream_chat(
            self.client, self.spec.url, body, self.spec.stall_timeout_s or p.stall_timeout_s, raw
        )

    async def __call__(self, plan: ProbePlan, watch: Watch) -> Cell:
        """One burst cell of ``plan.requests`` at ``plan.concurrency``; stopped when ``watch``
        answers a reason or the run's stop event is set."""
        cell_stop = asyncio.Event()
        seen = []

        def progress(event: str, data: dict) -> None:
            if event == "request":
                seen.append(data["record"])
                if watch(seen):
                    cell_stop.set()
            if self.progress:
                self.progress(event, data)

        async def follow_run_stop() -> None:
            await self.stop.wait()
            cell_stop.set()

        follower = asyncio.create_task(follow_run_stop())
        p = self.spec.profile
        spec = self.spec.model_copy(update={"requests": plan.requests})
        try:
            cell = await _measure_cell(
                len(self.cells),
                plan.concurrency,
                "burst",
                spec,
                p,
                spec.max_tokens or p.max_tokens,
                self.send,
                self.sampler,
                self.journal,
                cell_stop,
                len(self._prompts),
                progress,
            )
        finally:
            follower.cancel()
        self.cells.append(cell)
        if cell.client_bound and cell.client:
            self.warnings.append(
                f"W_CLIENT_BOUND: cell {cell.index} (concurrency {cell.concurrency}): "
                f"{cell.client.reason}"
            )
        return cell

    def result(self) -> BenchResult:
        """The probes so far as a bench result (not written: the capacity result holds it)."""
        cut = self.stop.is_set()
        cond = self.conditions.model_copy(update={"finished_at": _now_iso(), "cut_short": cut})
        warnings = list(self.warnings)
        if cut:
            warnings.append(
                "W_CUT_SHORT: stopped by a signal; the result holds the probes measured so far"
            )
        return assemble(
            cond,
            self.cells,
            self.sampler.run_summary(),
            warnings=warnings,
            journal=self.journal.path.name,
            extra=self.spec.extra,
        )


@contextlib.asynccontextmanager
async def open_prober(
    spec: BenchSpec,
    *,
    max_concurrency: int,
    rig: RigSummary | None,
    rig_unavailable: str | None,
    sampler: Sampler,
    stop: asyncio.Event,
    progress: Progress | None = None,
) -> AsyncIterator[BenchProber]:
    """Discover the endpoint, start the journal beside ``spec.out``, warm up; yield the prober."""
    p = spec.profile
    stall = spec.stall_timeout_s or p.stall_timeout_s
    # Enough connections for the largest probe the search may ask for.
    top = max_concurrency + 4
    limits = httpx.Limits(max_connections=top, max_keepalive_connections=top)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(30.0, read=stall)) as client:
        info = await asyncio.to_thread(discover, spec.url)
        model = spec.model or (info.models[0] if info.models else None)
        if model is None or (info.models and model not in info.models):
            raise EndpointError(
                "E_MODEL_ID",
                f"{spec.url} does not serve {spec.model!r}",
                details=[f"served: {m}" for m in info.models],
            )
        engine = info.engine if info.engine_known or not spec.recipe_engine else spec.recipe_engine
        version = info.engine_version or (
            spec.recipe_engine_version if engine == spec.recipe_engine else None
        )
        cond = Conditions(
            url=spec.url,
            model=model,
            engine=engine,
            engine_version=version,
            recipe_slug=spec.recipe_slug,
            recipe_revision=spec.recipe_revision,
            rig=rig,
            rig_unavailable=rig_unavailable,
            profile=profile_ref(spec),
            mode="burst",
            rigbook_version=__version__,
            started_at=_now_iso(),
        )
        jpath = journal_path(spec.out)
        jpath.unlink(missing_ok=True)
        journal = Journal(jpath)
        journal.write("start", conditions=cond.model_dump(mode="json"), extra=spec.extra)
        prober = BenchProber(spec, client, cond, journal, sampler, stop, progress)
        sampler.start()
        try:
            await _warmup(prober.send, spec.warmup if spec.warmup is not None else p.warmup, stop)
            yield prober
        finally:
            sampler.stop()
            journal.write("end", cut_short=stop.is_set())
            journal.close()
