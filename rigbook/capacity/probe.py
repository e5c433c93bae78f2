"""Probes as bench runs: each probe is one `rigbook.bench.measure` run of a single burst cell.

So a probe is a normal bench cell in every way (profile, validity rules, client-bound detection,
rig and telemetry where the endpoint is local, its own result file and request journal, written
under ``<result>-probes/`` as it runs). The capacity result gathers their cells into one bench
result that `rigbook report` and `rigbook compare` read like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rigbook.bench import MeasureRequest, measure_async
from rigbook.bench.assemble import assemble
from rigbook.bench.metrics import build_cell
from rigbook.bench.result import BenchResult, Cell, CellTelemetry, RequestRecord, save_result
from rigbook.capacity.drain import Drain, IdleWait
from rigbook.capacity.search import ProbePlan, Watch
from rigbook.errors import RigbookError

# progress(event, data), as the bench calls it: "cell", "request", "cell_done".
Progress = Callable[[str, dict], None]


def probes_dir(out: Path) -> Path:
    """Where the probes' own result files and journals go: beside the capacity result."""
    return out.with_name(out.stem + "-probes")


def _renumbered(cell: Cell, index: int) -> Cell:
    """``cell`` as cell ``index`` of the gathered result (each probe's own run calls it 0)."""
    requests = [r.model_copy(update={"cell": index}) for r in cell.requests]
    return cell.model_copy(update={"index": index, "requests": requests})


def _stopped_by_watch(result: BenchResult) -> BenchResult:
    """A probe the search stopped (a term broken beyond doubt) without the bench's W_CUT_SHORT,
    which says a signal stopped it: the capacity result's probe says why it ended
    (``stopped_early``), and its cell is still marked ``cut_short``."""
    warnings = [w for w in result.warnings if w.code != "W_CUT_SHORT"]
    return result.model_copy(update={"warnings": warnings}).with_hash()


def warmup_stalled(result: BenchResult) -> RigbookError | None:
    """``E_WARMUP_STALLED`` when every warmup request failed by stalling: a server still loading
    or slow to its first token, which the bench's verdict would blame on the engine."""
    errors = [r.error or "" for r in result.warmup]
    if result.cells or not errors or not all(e.startswith("stalled") for e in errors):
        return None
    return RigbookError(
        "E_WARMUP_STALLED",
        f"every warmup request stalled ({errors[-1]}): the server is slow to answer or still "
        "loading, not necessarily broken",
        details=[f"warmup request {r.index}: {r.error}" for r in result.warmup],
    )


class BenchProber:
    """The :class:`~rigbook.capacity.search.Probe` over a live endpoint: one bench run per probe,
    each but the first after a wait for an idle server (:mod:`rigbook.capacity.drain`)."""

    def __init__(
        self,
        base: MeasureRequest,
        out: Path,
        stop: asyncio.Event,
        extra: dict,
        idle: IdleWait,
        progress: Progress | None = None,
    ) -> None:
        self.base, self.folder, self.stop = base, probes_dir(out), stop
        self.extra, self.progress = extra, progress
        self.idle = idle
        self.results: list[BenchResult] = []
        self.files: list[str] = []
        self.drains: list[Drain | None] = []

    async def __call__(self, plan: ProbePlan, watch: Watch) -> Cell:
        """One burst cell of ``plan.requests`` at ``plan.concurrency``; stopped when ``watch``
        answers a reason or the run's stop event is set."""
        n = len(self.results)
        drain = None
        if n:
            drain = await self.idle(self.results[-1].cells[0].cut_short, self.stop)
        out = self.folder / f"probe-{n + 1:02d}-c{plan.concurrency}.json"
        # Only the first probe warms the server up; the later ones find it warm.
        request = self.base.model_copy(
            update={
                "concurrency": [plan.concurrency],
                "requests": plan.requests,
                "out": out,
                "warmup": self.base.warmup if n == 0 else 0,
            }
        )
        cell_stop = asyncio.Event()
        seen: list[RequestRecord] = []

        def progress(event: str, data: dict) -> None:
            if event == "request" and not data["record"].warmup:
                seen.append(data["record"])
                if watch(seen):
                    cell_stop.set()
            if self.progress:
                self.progress(event, data)

        async def follow_run_stop() -> None:
            await self.stop.wait()
            cell_stop.set()

        follower = asyncio.create_task(follow_run_stop())
        try:
            measured = await measure_async(request, cell_stop, progress)
        finally:
            follower.cancel()
        if not measured.result.cells:
            # The warmup never succeeded (the verdict names the fault), or the run was stopped
            # before its cell began.
            if measured.verdict is not None and not self.stop.is_set():
                raise warmup_stalled(measured.result) or measured.verdict.error()
            return build_cell(
                index=n,
                mode="burst",
                concurrency=plan.concurrency,
                records=[],
                requests_planned=plan.requests,
                duration_s=None,
                window=None,
                telemetry=CellTelemetry(available=False, reason="stopped"),
                client=None,
                cut_short=True,
            )
        result = measured.result
        if cell_stop.is_set() and not self.stop.is_set():
            # Stopped by the SLO watch, not by a signal: the bench's W_CUT_SHORT ("stopped by a
            # signal") would be false, here and in the capacity result that gathers the probes.
            result = _stopped_by_watch(result)
            save_result(result, out)
        self.results.append(result)
        self.drains.append(drain)
        self.files.append(out.relative_to(self.folder.parent).as_posix())
        return _renumbered(result.cells[0], n)

    def result(self) -> BenchResult:
        """Every probe's cell as one bench result, under the first probe's conditions."""
        first, last = self.results[0], self.results[-1]
        cells = [_renumbered(r.cells[0], i) for i, r in enumerate(self.results)]
        energy = [r.telemetry.energy_j_total for r in self.results]
        telemetry = first.telemetry.model_copy(
            update={"energy_j_total": sum(energy) if all(e is not None for e in energy) else None}
        )
        cond = first.conditions.model_copy(
            update={"finished_at": last.conditions.finished_at, "cut_short": self.stop.is_set()}
        )
        warnings = [
            w.model_copy(update={"message": f"{w.message} (probe {i + 1})"})
            for i, r in enumerate(self.results)
            for w in r.warnings
        ]
        return assemble(cond, cells, telemetry, warnings=warnings, journal=None, extra=self.extra)
