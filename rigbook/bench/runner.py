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
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict

from rigbook import __version__
from rigbook.bench import server_metrics, speculation
from rigbook.bench.assemble import assemble
from rigbook.bench.backend import RequestBodies
from rigbook.bench.client import RawRequest, Target
from rigbook.bench.clients import CellClient, ClientChoice, open_client, resolve
from rigbook.bench.journal import Journal, journal_path
from rigbook.bench.metrics import buffered_requests, build_cell, to_record
from rigbook.bench.profiles import Profile
from rigbook.bench.repeats import RepeatPolicy, level_interval, stop_reason
from rigbook.bench.result import (
    BenchResult,
    Cell,
    ClientLoad,
    Conditions,
    LevelInterval,
    ProfileRef,
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
from rigbook.bench.workers import WorkerCell, WorkerPool, cell_workers, merge_loads
from rigbook.bench.workloads import cache as prefix
from rigbook.bench.workloads.model import Workload, default_workload
from rigbook.bench.workloads.sessions import SessionClient, Sessions
from rigbook.bench.workloads.trace import Trace
from rigbook.bench.workloads.trace_run import DEFAULT_MAX_LAG_MS, replay_cell
from rigbook.endpoint.discover import discover
from rigbook.errors import EndpointError
from rigbook.findings import Finding
from rigbook.rig.model import RigSummary

# progress(event, data): "cell" {index, concurrency, total}, "request" {record}, "cell_done" {cell}
Progress = Callable[[str, dict], None]


class BenchSpec(BaseModel):
    """One bench run, as the command line asked for it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    url: str
    model: str | None = None
    profile: Profile
    # What the requests are (rigbook.bench.workloads); None: prose v1, the seed's method.
    workload: Workload | None = None
    # trace workloads: the trace, its speed and the p99 lag past which W_TRACE_LAG is due;
    # dataset workloads: the prompts (rigbook.bench.workloads.sources)
    trace: Trace | None = None
    speed: float = 1.0
    max_lag_ms: float = DEFAULT_MAX_LAG_MS
    prompts: tuple[str, ...] | None = None
    concurrency: list[int] | None = None
    max_tokens: int | None = None
    requests: int | None = None
    duration_s: float | None = None
    warmup: int | None = None
    stall_timeout_s: float | None = None
    workers: int | None = None
    # Which client streams the requests (rigbook.bench.clients): auto takes the compiled one.
    client: ClientChoice = "auto"
    # Repeat each level's cell until its rates' 95 % intervals are this narrow (None: run each once).
    repeat: RepeatPolicy | None = None
    recipe_slug: str | None = None
    recipe_revision: int | None = None
    recipe_engine: str | None = None
    recipe_engine_version: str | None = None
    extra: dict = {}
    out: Path


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def profile_ref(spec: BenchSpec) -> ProfileRef:
    """The profile as applied, with any value the command line changed listed as an override."""
    p = spec.profile
    overrides: dict = {}
    for key, value in (
        ("concurrency", spec.concurrency),
        ("max_tokens", spec.max_tokens),
        ("requests_per_level", spec.requests),
        ("duration_s", spec.duration_s),
        ("warmup", spec.warmup),
        ("stall_timeout_s", spec.stall_timeout_s),
    ):
        default = getattr(p, key, None)
        same = (
            list(value) == list(default)
            if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple))
            else value == default
        )
        if value is not None and not same:
            overrides[key] = value
    if spec.duration_s is not None:
        overrides["mode"] = "sustained"
    return ProfileRef(
        name=p.name,
        version=p.version,
        content_hash=p.content_hash(),
        max_tokens=spec.max_tokens or p.max_tokens,
        temperature=p.temperature,
        top_p=p.top_p,
        thinking=p.thinking,
        reply_length_held=p.hold_length,
        workload=p.workload,
        overrides=overrides,
    )


async def run_bench(
    spec: BenchSpec,
    *,
    rig: RigSummary | None,
    rig_unavailable: str | None,
    sampler: Sampler,
    progress: Progress | None = None,
    stop: asyncio.Event | None = None,
) -> BenchResult:
    """Run the whole bench and write the result (and its journal); returns the result.

    Setting ``stop`` ends the run early; the result then holds what was measured, ``cut_short``."""
    stop = stop or asyncio.Event()
    info = await asyncio.to_thread(discover, spec.url)
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
        return await _run(
            spec,
            info,
            client,
            rig=rig,
            rig_unavailable=rig_unavailable,
            sampler=sampler,
            progress=progress,
            stop=stop,
        )


async def _run(
    spec: BenchSpec,
    info,
    client: httpx.AsyncClient,
    *,
    rig: RigSummary | None,
    rig_unavailable: str | None,
    sampler: Sampler,
    progress: Progress | None,
    stop: asyncio.Event,
) -> BenchResult:
    p = spec.profile
    # A trace replay is one cell whose load the trace sets: no levels, no worker processes.
    levels = [1] if spec.trace is not None else spec.concurrency or list(p.concurrency)
    max_tokens = spec.max_tokens or p.max_tokens
    mode = "sustained" if spec.duration_s is not None else p.mode
    stall = spec.stall_timeout_s or p.stall_timeout_s
    prompts = list(spec.prompts) if spec.prompts else p.prompts()
    model = spec.model or (info.models[0] if info.models else None)
    if model is None or (info.models and model not in info.models):
        raise EndpointError(
            "E_MODEL_ID",
            f"{spec.url} does not serve {spec.model!r}",
            details=[f"served: {m}" for m in info.models],
        )
    # What the server says wins when it names a known engine; llama-cpp-python,
    # for one, answers owned_by "me", and then the recipe's engine is the better record.
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
        workload=(spec.workload or default_workload()).ref(),
        mode=mode,
        rigbook_version=__version__,
        started_at=_now_iso(),
    )
    jpath = journal_path(spec.out)
    jpath.unlink(missing_ok=True)
    journal = Journal(jpath)
    journal.write("start", conditions=cond, extra=spec.extra)
    target = Target(spec.url)
    workload = spec.workload or default_workload()
    # Sessions stream through the Python client, which keeps each reply's text for the next turn.
    kind = "python" if workload.sessions else resolve(spec.client, target)
    bodies = RequestBodies(p, model, prompts, max_tokens)
    plan = CellPlan(
        target=target,
        bodies=bodies,
        stall_s=stall,
        max_tokens=max_tokens,
        hold_length=p.hold_length,
        mode=mode,
        metrics=client,
        url=spec.url,
        client=kind,
        sessions=Sessions(workload, p, model, max_tokens) if workload.sessions else None,
    )

    # Worker processes only when some cell needs more than this one (rigbook.bench.workers).
    size = 1 if workload.sessions else max(cell_workers(c, spec.workers) for c in levels)
    pool = (
        WorkerPool(size, url=spec.url, bodies=bodies, stall_s=stall, client=kind)
        if size > 1
        else None
    )
    sampler.start()
    cells: list[Cell] = []
    warmup: list[RequestRecord] = []
    warnings: list[Finding] = []
    intervals: list[LevelInterval] = []
    try:
        warmup = await _warmup(
            plan, spec.warmup if spec.warmup is not None else p.warmup, stop, journal
        )
        # A warmup that never succeeded measures nothing: the result keeps its failures and the
        # verdict (rigbook.bench.measure) names the fault.
        if not warmup or any(r.ok for r in warmup):
            if pool is not None:
                await pool.start()
            # Everything alive now lives for the whole run: keep the collector from walking it.
            gc.collect()
            gc.freeze()
            if spec.trace is not None:
                cell, lines = await replay_cell(
                    spec.trace,
                    profile=p,
                    model=model,
                    url=spec.url,
                    client_kind=kind,
                    stall_s=stall,
                    speed=spec.speed,
                    max_lag_ms=spec.max_lag_ms,
                    metrics=client,
                    sampler=sampler,
                    journal=journal,
                    stop=stop,
                    progress=progress,
                )
                cell = cell.model_copy(
                    update={"workload": (spec.workload or default_workload()).ref().key()}
                )
                cells.append(cell)
                warnings += _cell_warnings(cell, spec.extra.get("speculative_method")) + lines
                levels = []
            for conc in levels:
                if stop.is_set():
                    break
                level: list[Cell] = []
                began = time.monotonic()
                while True:
                    repeat = len(level) if spec.repeat is not None else None
                    cell = await _measure_cell(
                        len(cells), conc, spec, plan, sampler, journal, stop, progress, pool, repeat
                    )
                    cells.append(cell)
                    level.append(cell)
                    warnings += _cell_warnings(cell, spec.extra.get("speculative_method"))
                    if spec.repeat is None:
                        break
                    why = stop_reason(level, spec.repeat, time.monotonic() - began, stop.is_set())
                    if why is not None:
                        intervals.append(level_interval(conc, level, spec.repeat, why))
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
        extra=spec.extra,
        warmup=warmup,
        intervals=intervals,
    )
    save_result(result, spec.out)
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
    """What every request of the run shares: where it goes, the encoded bodies, limits."""

    def __init__(
        self,
        *,
        target: Target,
        bodies: RequestBodies,
        stall_s: float,
        max_tokens: int,
        hold_length: bool,
        mode: Literal["burst", "sustained"],
        metrics: httpx.AsyncClient,
        url: str,
        client: Literal["compiled", "python"] = "python",
        sessions: Sessions | None = None,
    ) -> None:
        self.target, self.bodies, self.stall_s = target, bodies, stall_s
        self.max_tokens, self.hold_length, self.mode = max_tokens, hold_length, mode
        self.metrics, self.url, self.client = metrics, url, client
        self.sessions = sessions

    def open_client(self) -> CellClient:
        """A client for one cell or the warmup, on the running loop; ``close()`` it after."""
        if self.sessions is not None:
            return SessionClient(self.target, self.stall_s)
        return open_client(self.client, self.target, self.stall_s)

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
            max_tokens=self.max_tokens,
            hold_length=self.hold_length,
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
    conc: int,
    spec: BenchSpec,
    plan: CellPlan,
    sampler: Sampler,
    journal: Journal,
    stop: asyncio.Event,
    progress: Progress | None,
    pool: WorkerPool | None = None,
    repeat: int | None = None,
) -> Cell:
    p, mode = spec.profile, plan.mode
    workers = cell_workers(conc, spec.workers) if pool is not None else 1
    requests = max(spec.requests or p.requests_per_level, conc) if mode == "burst" else None
    sessions = plan.sessions
    if sessions is not None:  # every user's every turn
        requests = conc * sessions.workload.turns
    duration = (spec.duration_s or p.duration_s) if mode == "sustained" else None
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
    counted = await server_metrics.read(plan.metrics, plan.url)
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
                assert isinstance(streams, SessionClient)
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
    counted_after = await server_metrics.read(plan.metrics, plan.url) if counted else None
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
            "workload": (spec.workload or default_workload()).ref().key(),
            "turns": turns,
            "prefix_cache": cache,
        }
    )
    journal.write("cell_end", cell=cell.model_dump(mode="json", exclude={"requests"}))
    if progress:
        progress("cell_done", {"cell": cell})
    return cell
