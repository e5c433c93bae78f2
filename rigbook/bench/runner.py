"""The bench run: discover the endpoint, warm up, measure each cell, journal, assemble, save.

SIGTERM and SIGINT stop the run between or inside cells; what was measured is
written with ``cut_short: true``. Every request is journaled as it ends.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict

from rigbook import __version__
from rigbook.bench.assemble import assemble
from rigbook.bench.backend import RawRequest, chat_payload, stream_chat
from rigbook.bench.journal import Journal, journal_path
from rigbook.bench.metrics import build_cell, to_record
from rigbook.bench.profiles import Profile
from rigbook.bench.result import BenchResult, Cell, Conditions, ProfileRef, RequestRecord, save_result
from rigbook.bench.scheduler import ClientMonitor, run_burst, run_sustained
from rigbook.bench.telemetry import Sampler
from rigbook.endpoint.discover import discover
from rigbook.errors import EndpointError
from rigbook.rig.model import RigSummary

# progress(event, data): "cell" {index, concurrency, total}, "request" {record}, "cell_done" {cell}
Progress = Callable[[str, dict], None]


class BenchSpec(BaseModel):
    """One bench run, as the command line asked for it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    url: str
    model: str | None = None
    profile: Profile
    concurrency: list[int] | None = None
    max_tokens: int | None = None
    requests: int | None = None
    duration_s: float | None = None
    warmup: int | None = None
    stall_timeout_s: float | None = None
    recipe_slug: str | None = None
    recipe_revision: int | None = None
    recipe_engine: str | None = None
    recipe_engine_version: str | None = None
    extra: dict = {}
    out: Path


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def profile_ref(spec: BenchSpec) -> ProfileRef:
    """The profile as applied, with any value the command line changed listed as an override."""
    p = spec.profile
    overrides: dict = {}
    for key, value in (("concurrency", spec.concurrency), ("max_tokens", spec.max_tokens),
                       ("requests_per_level", spec.requests), ("duration_s", spec.duration_s),
                       ("warmup", spec.warmup), ("stall_timeout_s", spec.stall_timeout_s)):
        default = getattr(p, key, None)
        same = list(value) == list(default) if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)) \
            else value == default
        if value is not None and not same:
            overrides[key] = value
    if spec.duration_s is not None:
        overrides["mode"] = "sustained"
    return ProfileRef(name=p.name, version=p.version, content_hash=p.content_hash(),
                      max_tokens=spec.max_tokens or p.max_tokens, temperature=p.temperature, top_p=p.top_p,
                      thinking=p.thinking, reply_length_held=p.hold_length, workload=p.workload, overrides=overrides)


async def run_bench(spec: BenchSpec, *, rig: RigSummary | None, rig_unavailable: str | None, sampler: Sampler,
                    progress: Progress | None = None) -> BenchResult:
    """Run the whole bench and write the result (and its journal); returns the result."""
    p = spec.profile
    levels = spec.concurrency or list(p.concurrency)
    max_tokens = spec.max_tokens or p.max_tokens
    mode = "sustained" if spec.duration_s is not None else p.mode
    stall = spec.stall_timeout_s or p.stall_timeout_s
    prompts = p.prompts()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    limits = httpx.Limits(max_connections=max(levels) + 4, max_keepalive_connections=max(levels) + 4)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(30.0, read=stall)) as client:
        info = await asyncio.to_thread(discover, spec.url)
        model = spec.model or (info.models[0] if info.models else None)
        if model is None or (info.models and model not in info.models):
            raise EndpointError("E_MODEL_ID", f"{spec.url} does not serve {spec.model!r}",
                                details=[f"served: {m}" for m in info.models])
        # What the server says wins when it names a known engine; llama-cpp-python,
        # for one, answers owned_by "me", and then the recipe's engine is the better record.
        engine = info.engine if info.engine_known or not spec.recipe_engine else spec.recipe_engine
        version = info.engine_version or (spec.recipe_engine_version if engine == spec.recipe_engine else None)
        cond = Conditions(url=spec.url, model=model, engine=engine, engine_version=version,
                          recipe_slug=spec.recipe_slug, recipe_revision=spec.recipe_revision, rig=rig,
                          rig_unavailable=rig_unavailable, profile=profile_ref(spec), mode=mode,
                          rigbook_version=__version__, started_at=_now_iso())
        jpath = journal_path(spec.out)
        jpath.unlink(missing_ok=True)
        journal = Journal(jpath)
        journal.write("start", conditions=cond.model_dump(mode="json"), extra=spec.extra)

        async def send(i: int, raw: RawRequest) -> None:
            body = chat_payload(p, model, prompts[i % len(prompts)], max_tokens)
            await stream_chat(client, spec.url, body, stall, raw)

        sampler.start()
        cells: list[Cell] = []
        warnings: list[str] = []
        try:
            await _warmup(send, spec.warmup if spec.warmup is not None else p.warmup, stop)
            for index, conc in enumerate(levels):
                if stop.is_set():
                    break
                cell = await _measure_cell(index, conc, mode, spec, p, max_tokens, send, sampler, journal, stop,
                                           len(prompts), progress)
                cells.append(cell)
                if cell.client_bound:
                    warnings.append(f"W_CLIENT_BOUND: cell {index} (concurrency {conc}): {cell.client.reason}")
        finally:
            sampler.stop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        cut = stop.is_set()
        if cut:
            warnings.append("W_CUT_SHORT: stopped by a signal; the result holds the cells measured so far")
        cond = cond.model_copy(update={"finished_at": _now_iso(), "cut_short": cut})
        result = assemble(cond, cells, sampler.run_summary(), warnings=warnings, journal=jpath.name, extra=spec.extra)
        save_result(result, spec.out)
        journal.write("end", cut_short=cut)
        journal.close()
        return result


async def _warmup(send, count: int, stop: asyncio.Event) -> None:
    """Requests one at a time before measuring; if none succeeds the endpoint cannot be benched."""
    errors = []
    for i in range(count):
        if stop.is_set():
            return
        raw = RawRequest(sent=time.perf_counter())
        await send(i, raw)
        if raw.error is None:
            return
        errors.append(raw.error)
    if errors:
        code = "E_CONNECT" if all(e.startswith("connect") for e in errors) else "E_HTTP"
        raise EndpointError(code, f"every warmup request failed: {errors[-1]}")


async def _measure_cell(index, conc, mode, spec: BenchSpec, p: Profile, max_tokens, send, sampler: Sampler,
                        journal: Journal, stop: asyncio.Event, n_prompts: int, progress: Progress | None) -> Cell:
    requests = max(spec.requests or p.requests_per_level, conc) if mode == "burst" else None
    duration = (spec.duration_s or p.duration_s) if mode == "sustained" else None
    journal.write("cell_start", index=index, mode=mode, concurrency=conc, requests_planned=requests, duration_s=duration)
    if progress:
        progress("cell", {"index": index, "concurrency": conc, "total": requests, "duration_s": duration})
    records: list[RequestRecord] = []
    raws: list[tuple[int, RawRequest]] = []
    monitor = ClientMonitor()
    sampler.begin()
    monitor.start()
    t0 = time.perf_counter()

    def on_done(i: int, raw: RawRequest) -> None:
        # Burst records are final here; sustained ones wait for the window to be known.
        if mode == "sustained":
            raws.append((i, raw))
            return
        rec = to_record(raw, cell=index, index=i, prompt_index=i % n_prompts, t0=t0, max_tokens=max_tokens,
                        hold_length=p.hold_length)
        records.append(rec)
        journal.write("request", record=rec.model_dump(mode="json"))
        if progress:
            progress("request", {"record": rec})

    window = None
    if mode == "burst":
        await run_burst(send, on_done, requests=requests, concurrency=conc, stop=stop)
    else:
        w0, w1 = await run_sustained(send, on_done, concurrency=conc, duration_s=duration, stop=stop)
        window = (w0 - t0, w1 - t0)
        for i, raw in raws:
            rec = to_record(raw, cell=index, index=i, prompt_index=i % n_prompts, t0=t0, max_tokens=max_tokens,
                            hold_length=p.hold_length, window=(w0, w1))
            records.append(rec)
            journal.write("request", record=rec.model_dump(mode="json"))
            if progress:
                progress("request", {"record": rec})
    telemetry = sampler.end()
    records.sort(key=lambda r: r.index)
    ok_itl = sorted(r.itl_ms_mean for r in records if r.itl_ms_mean)
    client = await monitor.stop(sum(r.output_tokens for r in records), ok_itl[len(ok_itl) // 2] if ok_itl else None)
    cell = build_cell(index=index, mode=mode, concurrency=conc, records=records, requests_planned=requests,
                      duration_s=duration, window=window, telemetry=telemetry, client=client, cut_short=stop.is_set())
    journal.write("cell_end", cell=cell.model_dump(mode="json", exclude={"requests"}))
    if progress:
        progress("cell_done", {"cell": cell})
    return cell
