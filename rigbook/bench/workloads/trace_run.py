"""One trace replay as a bench cell: every request at its planned time, with its own prompt
(the trace's input length, made by :mod:`rigbook.bench.workloads.trace_prompts`) and its own
held reply length (the trace's output length).

The cell's concurrency is the most requests the replay had in flight at once (the trace sets
the load, not a level). Its :class:`TraceReplay` states the schedule lag, and how many
requests' prompts the engine counted at the trace's exact length.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx

from rigbook.bench import server_metrics
from rigbook.bench.backend import chat_payload
from rigbook.bench.client import Target
from rigbook.bench.clients import open_client
from rigbook.bench.journal import Journal
from rigbook.bench.metrics import build_cell, concurrency_reached, to_record
from rigbook.bench.profiles import Profile
from rigbook.bench.result import Cell, RequestRecord
from rigbook.bench.scheduler import judge_client
from rigbook.bench.telemetry import Sampler
from rigbook.bench.workloads.trace import (
    Clock,
    Sent,
    Trace,
    TraceReplay,
    lag_warning,
    replay,
    schedule_lag,
)
from rigbook.bench.workloads.trace_prompts import calibrate
from rigbook.findings import Finding
from rigbook.openai.body import encode
from rigbook.openai.stream import RawRequest

# A replay whose p99 lag is past this was not the trace's arrival pattern (W_TRACE_LAG).
DEFAULT_MAX_LAG_MS = 50.0


async def make_prompts(
    client: httpx.AsyncClient, url: str, model: str, trace: Trace
) -> tuple[list[str], int]:
    """Each request's message, and the chat template's token count (taken off each)."""
    maker = await calibrate(client, url, model, trace.block_tokens)
    texts = [(await maker.prompt(r, i))[0] for i, r in enumerate(trace.requests)]
    return texts, maker.overhead


async def run_trace_cell(
    *,
    index: int,
    trace: Trace,
    prompts: list[str],
    chat_template_tokens: int,
    profile: Profile,
    model: str,
    url: str,
    client_kind: str,
    stall_s: float,
    speed: float,
    max_lag_ms: float,
    metrics: httpx.AsyncClient,
    sampler: Sampler,
    journal: Journal | None,
    stop: asyncio.Event,
    clock: Clock | None = None,
    progress: Callable[[str, dict], None] | None = None,
) -> tuple[Cell, TraceReplay]:
    """Replay ``trace`` against ``url`` as cell ``index``."""
    bodies = [
        encode(chat_payload(profile, model, text, r.output_tokens))
        for r, text in zip(trace.requests, prompts, strict=True)
    ]
    if journal is not None:
        journal.write(
            "cell_start",
            index=index,
            repeat=None,
            mode="burst",
            concurrency=0,
            requests_planned=len(bodies),
            duration_s=None,
        )
    streams = open_client(
        "compiled" if client_kind == "compiled" else "python", Target(url), stall_s
    )
    raws = [RawRequest() for _ in bodies]
    records: list[RequestRecord] = []
    t0 = time.perf_counter()

    async def send(i: int) -> None:
        raw = raws[i]
        await streams.send(bodies[i], raw)
        req = trace.requests[i]
        rec = to_record(
            raw,
            cell=index,
            index=i,
            prompt_index=i,
            t0=t0,
            max_tokens=req.output_tokens,
            hold_length=profile.hold_length,
        )
        records.append(rec)
        if journal is not None:
            journal.write("request", record=rec)
        if progress is not None:
            progress("request", {"record": rec})

    if progress is not None:
        progress("cell", {"index": index, "concurrency": "trace", "total": len(bodies)})
    counted = await server_metrics.read(metrics, url)
    sampler.begin()
    streams.start()
    sent: list[Sent] = []
    try:
        sent = await replay(
            [r.at_s for r in trace.requests], send, speed=speed, clock=clock, stop=stop
        )
    finally:
        telemetry = sampler.end()
        load = await streams.stop()
        streams.close()
    counted_after = await server_metrics.read(metrics, url) if counted else None
    records.sort(key=lambda r: r.index)
    prompt = [r.prompt_tokens for r in records if r.prompt_tokens is not None]
    server = server_metrics.compare(
        counted,
        counted_after,
        client_tokens=sum(r.output_tokens for r in records),
        client_prompt_tokens=sum(prompt) if prompt and len(prompt) == len(records) else None,
        judged=not stop.is_set(),
    )
    cell = build_cell(
        index=index,
        mode="burst",
        concurrency=concurrency_reached(records),
        records=records,
        requests_planned=len(trace.requests),
        duration_s=None,
        window=None,
        telemetry=telemetry,
        client=judge_client(load, records),
        cut_short=stop.is_set(),
    ).model_copy(update={"server": server})
    lag = schedule_lag(sent, limit_ms=max_lag_ms, speed=speed)
    start = sent[0].planned if sent else 0.0
    exact = sum(
        1
        for r in records
        if r.prompt_tokens is not None
        and r.prompt_tokens == trace.requests[r.prompt_index].input_tokens
    )
    replayed = TraceReplay(
        source=trace.source,
        sha256=trace.sha256,
        layout=trace.layout,
        block_tokens=trace.block_tokens,
        speed=speed,
        requests_planned=len(trace.requests),
        requests_sent=len(sent),
        lag=lag,
        planned_s=[round(s.planned - start, 6) for s in sent],
        lag_ms=[round(1000.0 * s.lag_s, 3) for s in sent],
        prompt_tokens_exact=exact,
        prompt_tokens_counted=len(prompt),
        chat_template_tokens=chat_template_tokens,
    )
    cell = cell.model_copy(update={"trace": replayed})
    if journal is not None:
        journal.write("cell_end", cell=cell.model_dump(mode="json", exclude={"requests"}))
    if progress is not None:
        progress("cell_done", {"cell": cell})
    return cell, replayed


async def replay_cell(
    trace: Trace,
    *,
    profile: Profile,
    model: str,
    url: str,
    client_kind: str,
    stall_s: float,
    speed: float,
    max_lag_ms: float,
    metrics: httpx.AsyncClient,
    sampler: Sampler,
    journal: Journal,
    stop: asyncio.Event,
    progress: Callable[[str, dict], None] | None = None,
) -> tuple[Cell, list[Finding]]:
    """A bench run's trace cell (index 0): prompts made, the trace replayed; with its warnings."""
    prompts, overhead = await make_prompts(metrics, url, model, trace)
    cell, replayed = await run_trace_cell(
        index=0,
        trace=trace,
        prompts=prompts,
        chat_template_tokens=overhead,
        profile=profile,
        model=model,
        url=url,
        client_kind=client_kind,
        stall_s=stall_s,
        speed=speed,
        max_lag_ms=max_lag_ms,
        metrics=metrics,
        sampler=sampler,
        journal=journal,
        stop=stop,
        progress=progress,
    )
    warning = lag_warning(replayed.lag, cell.index) if replayed.lag else None
    return cell, [warning] if warning else []
