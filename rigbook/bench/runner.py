"""The bench run: discover the endpoint, warm up, measure each cell, journal, assemble, save.

Setting the caller's stop event ends the run between or inside cells; what was measured
is written with ``cut_short: true``. Every request is journaled as it ends. The run
installs no signal handlers: that is the command line's job (see rigbook.bench.measure).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime

import httpx

from rigbook import __version__
from rigbook.bench import server_metrics, speculation
from rigbook.bench.assemble import assemble
from rigbook.bench.backend import RequestBodies
from rigbook.bench.client import Target
from rigbook.bench.clients import CellClient, LoopClient, open_client
from rigbook.bench.journal import Journal, journal_path
from rigbook.bench.metrics import buffered_requests, build_cell, to_record
from rigbook.bench.plan import CellSpec, RunPlan
from rigbook.bench.repeats import level_interval, stop_reason
from rigbook.bench.result import (
    BenchResult,
    Cell,
    ClientLoad,
    Conditions,
    LevelInterval,
    RequestRecord,
    save_result,
)
from rigbook.bench.scheduler import (
    judge_client,
    run_burst,
    run_sustained,
    until_done_or_stopped,
    warned,
)
from rigbook.bench.telemetry import Sampler
from rigbook.bench.workers import WorkerCell, WorkerPool, merge_loads
from rigbook.bench.workloads import cache as prefix
from rigbook.bench.workloads.sessions import Sessions
from rigbook.bench.workloads.trace_run import replay_cell
from rigbook.findings import Finding
from rigbook.openai.http import tls_context
from rigbook.openai.models import discover, pick_model
from rigbook.openai.stream import RawRequest
from rigbook.rig.model import RigSummary

# progress(event, data): "cell" {index, concurrency, total}, "request" {record}, "cell_done" {cell}
Progress = Callable[[str, dict], None]


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


async def run_bench(
    plan: RunPlan,
    *,
    rig: RigSummary | None,
    rig_unavailable: str | None,
    sampler: Sampler,
    progress: Progress | None = None,
    stop: asyncio.Event | None = None,
) -> BenchResult:
    """Run the whole bench and write the result (and its journal); returns the result.

    The plan is executed as resolved (rigbook.bench.plan): nothing of it is derived again.
    Setting ``stop`` ends the run early; the result then holds what was measured, ``cut_short``."""
    stop = stop or asyncio.Event()
    info = await asyncio.to_thread(discover, plan.url)
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0), verify=tls_context()) as client:
        return await _run(
            plan,
            info,
            client,
            rig=rig,
            rig_unavailable=rig_unavailable,
            sampler=sampler,
            progress=progress,
            stop=stop,
        )


async def _run(
    plan: RunPlan,
    info,
    client: httpx.AsyncClient,
    *,
    rig: RigSummary | None,
    rig_unavailable: str | None,
    sampler: Sampler,
    progress: Progress | None,
    stop: asyncio.Event,
) -> BenchResult:
    p = plan.profile
    model = pick_model(plan.url, info.models, plan.model, trust_empty=True)
    facts = plan.recipe
    # What the server says wins when it names a known engine; llama-cpp-python,
    # for one, answers owned_by "me", and then the recipe's engine is the better record.
    engine = info.engine if info.engine_known or not facts.engine else facts.engine
    version = info.engine_version or (facts.engine_version if engine == facts.engine else None)
    cond = Conditions(
        url=plan.url,
        model=model,
        engine=engine,
        engine_version=version,
        recipe_slug=facts.slug,
        recipe_revision=facts.revision,
        rig=rig,
        rig_unavailable=rig_unavailable,
        profile=plan.profile_ref,
        workload=plan.workload_ref,
        mode=plan.mode,
        rigbook_version=__version__,
        started_at=_now_iso(),
    )
    jpath = journal_path(plan.out)
    jpath.unlink(missing_ok=True)
    journal = Journal(jpath)
    journal.write("start", conditions=cond, extra=facts.extra)
    workload = plan.workload
    bodies = RequestBodies(p, model, list(plan.prompts), plan.max_tokens)
    shared = CellPlan(
        plan,
        bodies=bodies,
        metrics=client,
        sessions=Sessions(workload, p, model, plan.max_tokens) if workload.sessions else None,
    )
    pool = (
        WorkerPool(
            plan.pool_workers, url=plan.url, bodies=bodies, stall_s=plan.stall_s, client=plan.client
        )
        if plan.pool_workers > 1
        else None
    )
    speculative_method = facts.extra.get("speculative_method")
    sampler.start()
    cells: list[Cell] = []
    warmup: list[RequestRecord] = []
    warnings: list[Finding] = []
    intervals: list[LevelInterval] = []
    try:
        warmup = await _warmup(shared, plan.warmup, stop, journal)
        # A warmup that never succeeded measures nothing: the result keeps its failures and the
        # verdict (rigbook.bench.measure) names the fault.
        if not warmup or any(r.ok for r in warmup):
            if pool is not None:
                await pool.start()
            # Everything alive now lives for the whole run: keep the collector from walking it.
            gc.collect()
            gc.freeze()
            if plan.trace is not None:
                cell, lines = await replay_cell(
                    plan.trace,
                    profile=p,
                    model=model,
                    url=plan.url,
                    client_kind=plan.client,
                    stall_s=plan.stall_s,
                    speed=plan.speed,
                    max_lag_ms=plan.max_lag_ms,
                    metrics=client,
                    sampler=sampler,
                    journal=journal,
                    stop=stop,
                    progress=progress,
                )
                cell = cell.model_copy(update={"workload": plan.workload_ref.key()})
                cells.append(cell)
                warnings += _cell_warnings(cell, speculative_method) + lines
            for spec in plan.cells:
                if stop.is_set():
                    break
                level: list[Cell] = []
                began = time.monotonic()
                while True:
                    repeat = len(level) if plan.repeat is not None else None
                    cell = await _measure_cell(
                        len(cells), spec, shared, sampler, journal, stop, progress, pool, repeat
                    )
                    cells.append(cell)
                    level.append(cell)
                    warnings += _cell_warnings(cell, speculative_method)
                    if plan.repeat is None:
                        break
                    why = stop_reason(level, plan.repeat, time.monotonic() - began, stop.is_set())
                    if why is not None:
                        intervals.append(level_interval(spec.concurrency, level, plan.repeat, why))
                        break
    finally:
        if pool is not None:
            pool.close()
        gc.unfreeze()
        sampler.stop()
    cut = stop.is_set()
    if cut:
        warnings.append(
            Finding.make(
                "W_CUT_SHORT", "stopped by a signal; the result holds the cells measured so far"
            )
        )
    cond = cond.model_copy(update={"finished_at": _now_iso(), "cut_short": cut})
    result = assemble(
        cond,
        cells,
        sampler.run_summary(),
        warnings=warnings,
        journal=jpath.name,
        extra=facts.extra,
        warmup=warmup,
        intervals=intervals,
    )
    save_result(result, plan.out)
    journal.write("end", cut_short=cut)
    journal.close()
    return result


def _cell_warnings(cell: Cell, speculative_method: str | None) -> list[Finding]:
    at = f"cell {cell.index} (concurrency {cell.concurrency})"
    found = []
    if cell.client and warned(cell.client):
        found.append(Finding.make("W_CLIENT_BOUND", f"{at}: {cell.client.reason}"))
    if cell.server and cell.server.mismatch:
        found.append(
            Finding.make(
                "W_SERVER_COUNT",
                f"{at}: the engine counted {cell.server.generation_tokens:.0f} generated tokens, "
                f"the client {cell.server.client_tokens}",
            )
        )
    if buffered := buffered_requests(cell.requests):
        found.append(
            Finding.make(
                "W_STREAM_BUFFERED",
                f"{at}: {len(buffered)} of {len(cell.requests)} replies came in one piece; their "
                "TTFT is the whole reply",
            )
        )
    if cell.speculation is None and speculation.declared(speculative_method):
        found.append(speculation.missing_warning(cell.index, cell.concurrency, speculative_method))
    cache = cell.prefix_cache
    if cache is not None and cache.requests and not prefix.has_reading(cache):
        found.append(
            Finding.make(
                "W_PREFIX_CACHE_NONE",
                f"{at}: the engine said nothing of its prefix cache (no cached tokens in its "
                "responses, no prefix-cache counters in /metrics)",
            )
        )
    if cache is not None and cache.contradictions:
        more = len(cache.contradictions) - 3
        found.append(
            Finding.make(
                "W_PREFIX_CACHE_CHECK",
                f"{at}: "
                + "; ".join(cache.contradictions[:3])
                + (f" (and {more} more)" if more > 0 else ""),
            )
        )
    return found


# How long a burst cell builds finished requests' records before letting the loop read again.
RECORD_SLICE_S = 0.001


class CellPlan:
    """What every request of the run shares: the run's plan, the encoded bodies, the client that
    reads the server's counters, and the sessions of a session workload."""

    def __init__(
        self,
        run: RunPlan,
        *,
        bodies: RequestBodies,
        metrics: httpx.AsyncClient,
        sessions: Sessions | None = None,
    ) -> None:
        self.run, self.bodies, self.metrics, self.sessions = run, bodies, metrics, sessions
        self.target = Target(run.url)

    def open_client(self) -> CellClient:
        """A client for one cell or the warmup, on the running loop; ``close()`` it after."""
        if self.sessions is not None:
            # the Python client, whatever --client says: it keeps each reply's text for the next turn
            return LoopClient(self.target, self.run.stall_s)
        return open_client(self.run.client, self.target, self.run.stall_s)

    def sender(self, client: CellClient):
        """``send(i, raw)``: stream request ``i`` (prompt ``i mod prompts``) into ``raw``."""
        body = self.bodies.body

        async def send(i: int, raw: RawRequest) -> None:
            await client.send(body(i), raw)

        return send

    def record(
        self,
        raw: RawRequest,
        *,
        cell: int,
        index: int,
        t0: float,
        window: tuple[float, float] | None = None,
        prompt_index: int | None = None,
    ) -> RequestRecord:
        """Request ``index``'s record; its prompt is ``index mod prompts`` unless said otherwise
        (worker processes number sustained requests after they were sent)."""
        record = to_record(
            raw,
            cell=cell,
            index=index,
            prompt_index=index % len(self.bodies) if prompt_index is None else prompt_index,
            t0=t0,
            max_tokens=self.run.max_tokens,
            hold_length=self.run.profile.hold_length,
            window=window,
        )
        return record if self.sessions is None else self.sessions.annotate(record, raw)


async def _warmup(
    plan: CellPlan, count: int, stop: asyncio.Event, journal: Journal
) -> list[RequestRecord]:
    """Requests one at a time before measuring, until one succeeds; each is journaled and kept.
    Setting ``stop`` ends the request in flight too; that one is neither a failure nor kept."""
    client = plan.open_client()
    send = plan.sender(client)
    records: list[RequestRecord] = []
    try:
        for i in range(count):
            if stop.is_set():
                break
            raw = RawRequest()
            await until_done_or_stopped([asyncio.create_task(send(i, raw))], stop)
            if stop.is_set() and raw.done is None:
                break
            rec = plan.record(raw, cell=-1, index=i, t0=raw.sent)
            rec = rec.model_copy(update={"warmup": True})
            journal.write("request", record=rec)
            records.append(rec)
            if rec.ok:
                break
    finally:
        client.close()
    return records


async def _measure_cell(
    index: int,
    spec: CellSpec,
    plan: CellPlan,
    sampler: Sampler,
    journal: Journal,
    stop: asyncio.Event,
    progress: Progress | None,
    pool: WorkerPool | None = None,
    repeat: int | None = None,
) -> Cell:
    mode, conc, workers = plan.run.mode, spec.concurrency, spec.workers
    requests, duration, sessions = spec.requests, spec.duration_s, plan.sessions
    journal.write(
        "cell_start",
        index=index,
        repeat=repeat,
        mode=mode,
        concurrency=conc,
        requests_planned=requests,
        duration_s=duration,
    )
    if progress:
        progress(
            "cell", {"index": index, "concurrency": conc, "total": requests, "duration_s": duration}
        )
    records: list[RequestRecord] = []
    # (index, raw, prompt index or None for index mod prompts)
    raws: list[tuple[int, RawRequest, int | None]] = []
    # One client per cell run here; a cell shared by worker processes uses theirs.
    local = pool is None or workers <= 1
    streams = plan.open_client() if local else None
    t0 = time.perf_counter()

    pending: deque[tuple[int, RawRequest, int | None]] = deque()
    wake = asyncio.Event()

    def on_done(i: int, raw: RawRequest, prompt: int | None = None) -> None:
        pending.append((i, raw, prompt))
        if raw.error is None:
            wake.set()
            return
        # A failure may stop the cell (the capacity search's watch): record it before the lane
        # that saw it sends again, or a fast refusal is followed by more of them.
        while pending:
            ended(*pending.popleft())

    def ended(i: int, raw: RawRequest, prompt: int | None) -> None:
        # Burst records are final once built. A sustained one is journaled now as a
        # `stream_ended` line, so a kill loses nothing finished, and built again once the
        # window is known (worker processes number those in send order only then).
        if mode == "sustained":
            raws.append((i, raw, prompt))
            journal.write(
                "stream_ended",
                record=plan.record(raw, cell=index, index=i, t0=t0, prompt_index=prompt),
            )
            return
        finish(i, raw, prompt)

    def finish(
        i: int, raw: RawRequest, prompt: int | None, window: tuple[float, float] | None = None
    ) -> None:
        rec = plan.record(raw, cell=index, index=i, t0=t0, window=window, prompt_index=prompt)
        records.append(rec)
        journal.write("request", record=rec)
        if progress:
            progress("request", {"record": rec})

    async def record_pending() -> None:
        # Streams of one length end together; building all their records in the loop iteration
        # they end in would stall the streams still reading. Build them in slices with a pass of
        # the loop (its reads) between two slices.
        while True:
            await wake.wait()
            wake.clear()
            began = time.perf_counter()
            while pending:
                ended(*pending.popleft())
                if pending and time.perf_counter() - began > RECORD_SLICE_S:
                    await asyncio.sleep(0)
                    began = time.perf_counter()

    # (start, end) of a sustained window on the perf clock
    edges: tuple[float, float] | None = None
    shared: WorkerCell | None = None
    counted = await server_metrics.read(plan.metrics, plan.run.url)
    sampler.begin()
    recorder = asyncio.create_task(record_pending())
    load: ClientLoad | None = None
    try:
        if streams is None:
            assert pool is not None
            shared = await pool.run_cell(
                mode=mode,
                workers=workers,
                concurrency=conc,
                requests=requests,
                duration_s=duration,
                stop=stop,
                on_done=on_done,
            )
            edges = shared.window
        else:
            send = plan.sender(streams)
            streams.start()
            if sessions is not None:
                assert isinstance(streams, LoopClient)
                await sessions.run_cell(streams, on_done, cell=index, users=conc, stop=stop)
            elif requests is not None:
                await run_burst(send, on_done, requests=requests, concurrency=conc, stop=stop)
            elif duration is not None:
                edges = await run_sustained(
                    send, on_done, concurrency=conc, duration_s=duration, stop=stop
                )
    finally:
        recorder.cancel()
        await asyncio.gather(recorder, return_exceptions=True)
        # Energy and client load are read as the streams end, before the last records are
        # built, so neither counts work that happens outside the token window.
        telemetry = sampler.end()
        if streams is not None:
            load = await streams.stop()
            streams.close()
        while pending:  # every stream has ended: nothing left to stall
            ended(*pending.popleft())
    window = (edges[0] - t0, edges[1] - t0) if edges is not None else None
    # Engines update their counters as a response returns; every stream has ended by now.
    counted_after = await server_metrics.read(plan.metrics, plan.run.url) if counted else None
    ranks = shared.ranks if shared is not None else {}
    for i, raw, prompt_index in raws:
        finish(ranks.get(i, i), raw, prompt_index, edges)
    records.sort(key=lambda r: r.index)
    if shared is not None:
        load = merge_loads(shared, records)
    assert load is not None, "the cell's own client or its workers measured the client"
    client = judge_client(load, records)
    prompt = [r.prompt_tokens for r in records if r.prompt_tokens is not None]
    server = server_metrics.compare(
        counted,
        counted_after,
        client_tokens=sum(r.output_tokens for r in records),
        # A total only when every request reported its prompt length.
        client_prompt_tokens=sum(prompt) if prompt and len(prompt) == len(records) else None,
        judged=mode == "burst" and not stop.is_set(),
    )
    turns, cache = [], None
    if sessions is not None:
        turns = prefix.turn_stats(records)
        cache = prefix.prefix_cache(
            records,
            cold={t + 1 for t in range(sessions.workload.turns) if sessions.cold(t)},
            cold_head_tokens=sessions.COLD_HEAD_TOKENS,
            before=counted.prefix_cache if counted else None,
            after=counted_after.prefix_cache if counted_after else None,
        )
    cell = build_cell(
        index=index,
        mode=mode,
        concurrency=conc,
        records=records,
        requests_planned=requests,
        duration_s=duration,
        window=window,
        telemetry=telemetry,
        client=client,
        cut_short=stop.is_set(),
    ).model_copy(
        update={
            "server": server,
            "repeat": repeat,
            "speculation": speculation.with_requests(
                server_metrics.acceptance(counted, counted_after), records
            ),
            "workload": plan.run.workload_ref.key(),
            "turns": turns,
            "prefix_cache": cache,
        }
    )
    journal.write("cell_end", cell=cell.model_dump(mode="json", exclude={"requests"}))
    if progress:
        progress("cell_done", {"cell": cell})
    return cell
