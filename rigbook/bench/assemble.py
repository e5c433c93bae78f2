"""From cells to a result: perf points in the seed record's shape, with their conditions."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TypeVar

from rigbook import __version__
from rigbook.bench.metrics import buffered_requests
from rigbook.bench.repeats import counted
from rigbook.bench.result import (
    BenchResult,
    Cell,
    Conditions,
    LevelInterval,
    RequestRecord,
    RunTelemetry,
)
from rigbook.bench.speculation import pooled_length
from rigbook.findings import Finding
from rigbook.recipe.schema import PerfConditions, PerfPoint, Sampling

T = TypeVar("T")


def _one(values: Sequence[T | None]) -> T | None:
    """The value when every entry agrees, else None (a mixed set is not one condition)."""
    vals = [v for v in values if v is not None]
    return vals[0] if vals and len(set(vals)) == 1 and len(vals) == len(values) else None


def perf_point(cell: Cell, cond: Conditions, extra: dict) -> PerfPoint:
    """One valid cell as a perf point: decode_tok_s is the aggregate of the cell's concurrent requests."""
    m, p = cell.metrics, cond.profile
    # A TTFT the client could have moved past the tolerance is left out; the rates stand.
    ttft_held = cell.client is None or "ttft_ms" not in cell.client.marked
    gpus = cond.rig.gpus if cond.rig else []
    limits = [g.power_enforced_limit_w for g in gpus] or cell.telemetry.power_limit_w_per_gpu
    names = [g.name for g in gpus] or [g.name for g in cell.telemetry.gpus]
    prompt = [r.prompt_tokens for r in cell.requests if r.ok and r.prompt_tokens]
    pc = PerfConditions(
        sampling=Sampling(temperature=p.temperature, top_p=p.top_p),
        reply_tokens=p.max_tokens,
        reply_length_held=p.reply_length_held,
        thinking=p.thinking,
        token_count_source=cell.token_count_source,
        bench_tool=cond.bench_tool,
        bench_tool_version=__version__,
        # The profile's content class for prose; any other workload by its own name.
        workload=p.workload
        if cond.workload is None or cond.workload.kind == "prose"
        else cond.workload.name,
        gpu_count=len(names),
        card=_one(names) if names else None,
        power_limit_w_per_gpu=_one(limits) if limits else None,
        engine=cond.engine,
        engine_version=cond.engine_version,
        quant=extra.get("quant"),
        kv_cache_dtype=extra.get("kv_cache_dtype"),
        speculative_method=extra.get("speculative_method"),
        speculative_acceptance_length=cell.speculation.mean_acceptance_length
        if cell.speculation
        else None,
        energy_j_per_token=cell.telemetry.energy_j_per_token,
        rate_definition="aggregate_with_ttft",
    )
    return PerfPoint(
        context_len=int(statistics.median(prompt)) if prompt else None,
        prefill_tok_s=m.prefill_tok_s.p50 if ttft_held else None,
        decode_tok_s=m.aggregate_tok_s,
        ttft_ms=m.ttft_ms.p50 if ttft_held else None,
        concurrency=cell.concurrency,
        claimed_by="measured",
        notes=(
            f"rigbook {cell.mode}, profile {p.name} v{p.version}, {m.requests_ok} requests at concurrency "
            f"{cell.concurrency}; decode_tok_s is their aggregate from the first send to the last token "
            f"(TTFT included); per_request_decode_tok_s_median is one request's rate after its first "
            f"token; context_len is the median prompt length"
            + ("" if ttft_held else "; TTFT left out: the client could have moved it over 1 %")
        ),
        per_request_decode_tok_s_median=m.per_request_decode_tok_s.p50,
        conditions=pc,
    )


def level_point(
    cells: list[Cell], level: LevelInterval, cond: Conditions, extra: dict
) -> PerfPoint | None:
    """One level's repeated cells as one perf point: each rate is the mean over the counted repeats
    (the centre of its interval), the rest as the first counted repeat states it."""
    good = counted(cells)
    if not good:
        return None
    point = perf_point(good[0], cond, extra)
    agg, med = level.aggregate_tok_s, level.per_request_decode_tok_s_median
    energy = [e for c in good if (e := c.telemetry.energy_j_per_token) is not None]
    shown = ", ".join(
        f"{name} 95 % CI ±{iv.half_width_pct:.1f} %"
        for name, iv in (("decode_tok_s", agg), ("per_request_decode_tok_s_median", med))
        if iv is not None and iv.half_width_pct is not None
    )
    note = f"mean of {len(good)} repeated waves" + (f" ({shown})" if shown else "")
    assert point.conditions is not None
    return point.model_copy(
        update={
            "decode_tok_s": agg.mean if agg else point.decode_tok_s,
            "per_request_decode_tok_s_median": med.mean
            if med
            else point.per_request_decode_tok_s_median,
            "notes": f"{point.notes}; {note}",
            "conditions": point.conditions.model_copy(
                update={
                    # Only where every counted repeat read its energy.
                    "energy_j_per_token": statistics.fmean(energy)
                    if len(energy) == len(good)
                    else None,
                    "speculative_acceptance_length": pooled_length([c.speculation for c in good]),
                }
            ),
        }
    )


def makes_a_point(cell: Cell) -> bool:
    """Whether a cell's numbers stand for the server at a held concurrency (a perf point's)."""
    return (
        cell.valid
        and not cell.client_bound
        and not buffered_requests(cell.requests)
        # A trace replay's load is the trace's, not a held concurrency: no point to claim.
        and cell.trace is None
    )


def assemble(
    cond: Conditions,
    cells: list[Cell],
    telemetry: RunTelemetry,
    *,
    warnings: list[Finding],
    journal: str | None,
    extra: dict | None = None,
    warmup: list[RequestRecord] | None = None,
    intervals: list[LevelInterval] | None = None,
) -> BenchResult:
    """The hashed result. Invalid or client-bound cells, cells with replies that came in one
    piece (W_STREAM_BUFFERED: their TTFT is the whole reply) and trace replays are kept but never
    become perf points. Warmup records are kept only when none succeeded: they are then the only evidence.
    With ``intervals`` (repeated cells) each level is one point, the mean of its repeats."""
    if intervals:
        found = [
            level_point(
                [c for c in cells if c.concurrency == lv.concurrency], lv, cond, extra or {}
            )
            for lv in intervals
        ]
        points = [p for p in found if p is not None]
    else:
        points = [perf_point(c, cond, extra or {}) for c in cells if makes_a_point(c)]
    failed_warmup = warmup if warmup and not any(r.ok for r in warmup) else []
    return BenchResult(
        conditions=cond,
        cells=cells,
        perf_points=points,
        telemetry=telemetry,
        warnings=warnings,
        journal=journal,
        warmup=failed_warmup,
        intervals=intervals or [],
    ).with_hash()
