"""What a rig can physically do: the ceilings a published point must stay under, and the ranges its rig
document must stay in.

A journal that agrees with its points proves only that the result is consistent: anyone can write a
consistent forgery, scaled timings and all. So every point is also held to what its hardware can do:

- **GPU memory bandwidth**: a decode step reads the active weights once per step, so one GPU set emits
  at most ``concurrency x bandwidth / weight bytes`` tokens per second (`rigbook compare`'s roofline,
  which :mod:`rigbook.hub.admission` applies); with speculative decoding, where that roofline bounds
  nothing, at most :data:`MAX_TOKENS_PER_STEP` tokens per sequence per step.
- **GPU compute**: every token, prompt or reply, costs at least ``2 x active parameters`` FLOPs, and a
  card does no more than its peak dense tensor rate at its lowest precision (:data:`PEAK_TFLOPS`).
  This bounds prefill too, and holds with any speculative method.
- **CPU memory bandwidth**: a run without a GPU reads its weights from host memory, no faster than
  :data:`MAX_HOST_BANDWIDTH_GB_S`, more than any host memory system has.
- **Power**: an enforced limit above zero and at most :data:`POWER_MARGIN` times the card's rated board
  power (:data:`MAX_CARD_POWER_W` for a card the table lacks); a point's power limit is its rig's.
- **Energy**: above zero; a cell's energy over its requests' span (a sustained cell's window) is a
  mean draw within the rig's enforced limits (x :data:`MARGIN`), and within
  :data:`ENERGY_TOLERANCE` of the mean its own power samples give over that span. A journal whose timings were scaled keeps its energy and samples, so
  its draw no longer adds up.
- **Times**: a TTFT of at most :data:`MAX_TTFT_MS`, a rate of at least :data:`MIN_RATE_TOK_S`, a run that
  starts before it finishes and neither in the future, requests whose stamps come in order.

Each bound is an upper bound with a margin (:data:`MARGIN`): it refuses only the impossible, so a
forgery below it is still possible, and the label of a point says only what the hub checked.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from rigbook.bench.result import BenchResult
from rigbook.compare.hardware import CardSpec, candidates
from rigbook.compare.weights import model_facts, quant_format
from rigbook.recipe.schema import PerfPoint

# Vendor peak dense tensor throughput at the card's lowest supported precision (FP4 on Blackwell, FP8 on
# Hopper and Ada, INT4 on Ampere), in 10^12 operations per second, by the card table's id. Sparse rates
# are not counted: serving engines do not use 2:4 sparsity for these models.
PEAK_TFLOPS = {
    "rtx-pro-6000-blackwell-workstation": 2015.0,
    "rtx-pro-6000-blackwell-maxq": 2015.0,
    "rtx-4090": 1321.0,
    "rtx-5090": 1676.0,
    "a100-40gb-pcie": 1248.0,
    "a100-80gb-pcie": 1248.0,
    "a100-40gb-sxm": 1248.0,
    "a100-80gb-sxm": 1248.0,
    "h100-sxm": 1979.0,
    "h100-pcie": 1513.0,
    "h100-nvl": 1671.0,
    "h200-sxm": 1979.0,
    "h200-nvl": 1671.0,
}
# Vendors round; a small model's weights partly stay in cache.
MARGIN = 1.10
# Tokens one sequence may gain in one speculative step (drafted tokens accepted plus the target's own).
MAX_TOKENS_PER_STEP = 16
MAX_HOST_BANDWIDTH_GB_S = 2000.0
POWER_MARGIN = 1.5
MAX_CARD_POWER_W = 2000.0
MAX_TTFT_MS = 3_600_000.0
MIN_RATE_TOK_S = 1e-3
# The power sampler's window and the requests' span differ by a sample or two.
ENERGY_TOLERANCE = 0.25
# Clocks of publisher and hub differ a little.
CLOCK_SKEW = timedelta(minutes=10)
RATE_NAMES = ("decode_tok_s", "prefill_tok_s", "per_request_decode_tok_s_median")
NO_SPECULATION = {"", "none", "off", "no"}


def card_spec(name: str | None) -> CardSpec | None:
    """The card table's entry for ``name`` when the name tells one entry (or entries that agree)."""
    found = candidates(name) if name else []
    if not found:
        return None
    return max(found, key=lambda c: (PEAK_TFLOPS.get(c.id, 0.0), c.bandwidth_gb_s))


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _ceilings(point: PerfPoint, model: str | None) -> list[tuple[str, float, str]]:
    """``(rate field, ceiling tok/s, why)`` for each bound this point's conditions allow."""
    c = point.conditions
    facts = model_facts(model)
    quant = quant_format(c.quant) if c else None
    if c is None or facts is None or not facts.active_params:
        return []
    n = point.concurrency or 1
    flops_per_token = 2.0 * facts.active_params
    found: list[tuple[str, float, str]] = []
    weights = facts.active_params * quant.bytes_per_param if quant else None
    speculative = (c.speculative_method or "").strip().lower() not in NO_SPECULATION
    step_tokens = MAX_TOKENS_PER_STEP if speculative else 1
    if c.gpu_count == 0 and weights:
        ceiling = step_tokens * n * MAX_HOST_BANDWIDTH_GB_S * 1e9 / weights
        found.append(
            (
                "decode_tok_s",
                ceiling,
                f"host memory bandwidth ceiling (no CPU host reads more than "
                f"{MAX_HOST_BANDWIDTH_GB_S:g} GB/s; {weights / 1e9:.3g} GB of weights per step)",
            )
        )
        return found
    spec = card_spec(c.card)
    if not c.gpu_count or spec is None:
        return found
    if weights and speculative:
        ceiling = step_tokens * n * spec.bandwidth_gb_s * c.gpu_count * 1e9 / weights
        found.append(
            (
                "decode_tok_s",
                ceiling,
                f"memory-bandwidth ceiling of {c.gpu_count} x {spec.name} ({spec.bandwidth_gb_s:g} GB/s, "
                f"{weights / 1e9:.3g} GB of weights per step, {MAX_TOKENS_PER_STEP} tokens per "
                f"speculative step)",
            )
        )
    peak = PEAK_TFLOPS.get(spec.id)
    if peak:
        ceiling = peak * 1e12 * c.gpu_count / flops_per_token
        why = (
            f"compute ceiling of {c.gpu_count} x {spec.name} ({peak:g} TFLOPS peak, "
            f"{flops_per_token:.3g} FLOPs per token)"
        )
        found += [("decode_tok_s", ceiling, why), ("prefill_tok_s", ceiling, why)]
    return found


def point_bound_problems(point: PerfPoint, model: str | None, where: str) -> list[str]:
    """Why ``point`` is beyond what its conditions' hardware can do (empty: within every bound)."""
    problems = []
    for name in RATE_NAMES:
        value = getattr(point, name)
        if value is not None and math.isfinite(value) and 0 < value < MIN_RATE_TOK_S:
            problems.append(
                f"{where}.{name}: {value:g} tok/s is below {MIN_RATE_TOK_S:g} (one token in "
                f"{1 / MIN_RATE_TOK_S:g} s): no run that short measures it"
            )
    if point.ttft_ms is not None and point.ttft_ms > MAX_TTFT_MS:
        problems.append(
            f"{where}.ttft_ms: {point.ttft_ms:g} ms is longer than any bench request waits "
            f"({MAX_TTFT_MS:g} ms)"
        )
    single = (
        point.model_copy(
            update={"decode_tok_s": point.per_request_decode_tok_s_median, "concurrency": 1}
        )
        if point.per_request_decode_tok_s_median is not None
        else None
    )
    for name, probe in (("", point), ("per_request_decode_tok_s_median", single)):
        if probe is None:
            continue
        for field, ceiling, why in _ceilings(probe, model):
            if name and field != "decode_tok_s":
                continue
            value = getattr(probe, field)
            if value is not None and value > ceiling * MARGIN:
                problems.append(
                    f"{where}.{name or field}: {value:g} tok/s is above what the hardware can do: the "
                    f"{why} is {ceiling:,.0f} tok/s at concurrency {probe.concurrency or 1} "
                    f"(x {MARGIN:g} allowed)"
                )
    c = point.conditions
    if c is not None and c.energy_j_per_token is not None and not c.energy_j_per_token > 0:
        problems.append(
            f"{where}.conditions.energy_j_per_token: must be above zero; got {c.energy_j_per_token!r}"
        )
    return problems


def power_problems(result: BenchResult) -> list[str]:
    """The rig's enforced power limits within each card's range, and each point's power limit its rig's."""
    rig = result.conditions.rig
    if rig is None:
        return []
    problems = []
    limits = set()
    for gpu in rig.gpus:
        limit = gpu.power_enforced_limit_w
        if limit is None:
            continue
        spec = card_spec(gpu.name)
        top = spec.power_envelope_w * POWER_MARGIN if spec else MAX_CARD_POWER_W
        if not 0 < limit <= top:
            what = (
                f"{spec.name} is rated {spec.power_envelope_w:g} W"
                if spec
                else "no card draws more"
            )
            problems.append(
                f"conditions.rig.gpus.{gpu.index}.power_enforced_limit_w: {limit:g} W is outside "
                f"the card's range (above 0, at most {top:g} W: {what})"
            )
        limits.add(limit)
    for i, point in enumerate(result.perf_points):
        claimed = point.conditions.power_limit_w_per_gpu if point.conditions else None
        if claimed is not None and limits and claimed not in limits:
            problems.append(
                f"perf_points.{i}.conditions.power_limit_w_per_gpu: {claimed:g} W, but the rig "
                f"enforced {', '.join(f'{v:g}' for v in sorted(limits))} W"
            )
    uuids = [g.uuid for g in rig.gpus if g.uuid]
    if len(set(uuids)) != len(uuids):
        problems.append("conditions.rig.gpus: one GPU UUID is listed more than once")
    return problems


def time_problems(result: BenchResult, now: datetime | None = None) -> list[str]:
    """The run starts before it finishes, neither in the future; each request's stamps come in order."""
    now = now or datetime.now(UTC)
    problems = []
    started, finished = _when(result.conditions.started_at), _when(result.conditions.finished_at)
    if started is None:
        problems.append(
            f"conditions.started_at: not an ISO 8601 time; got {result.conditions.started_at!r}"
        )
    for name, moment in (("started_at", started), ("finished_at", finished)):
        if moment is not None and moment > now + CLOCK_SKEW:
            problems.append(f"conditions.{name}: {moment.isoformat()} is in the future")
    if started is not None and finished is not None and finished < started:
        problems.append(
            f"conditions.finished_at: {finished.isoformat()} is before the start "
            f"({started.isoformat()})"
        )
    for i, cell in enumerate(result.cells):
        for j, r in enumerate(cell.requests):
            stamps = [
                s for s in (r.sent_s, r.first_token_s, r.last_token_s, r.done_s) if s is not None
            ]
            if stamps != sorted(stamps) or not all(math.isfinite(s) for s in stamps):
                problems.append(
                    f"cells.{i}.requests.{j}: its times are not in order (sent, first token, last "
                    f"token, done)"
                )
    return problems


def condition_problems(result: BenchResult) -> list[str]:
    """Each point's sampling, reply length and thinking are those of the profile the run used."""
    p = result.conditions.profile
    problems = []
    for i, point in enumerate(result.perf_points):
        c = point.conditions
        if c is None:
            continue
        where = f"perf_points.{i}.conditions"
        if c.reply_tokens is not None and c.reply_tokens != p.max_tokens:
            problems.append(
                f"{where}.reply_tokens: {c.reply_tokens}, but the run's profile asked for "
                f"{p.max_tokens}"
            )
        if c.sampling is not None:
            for name in ("temperature", "top_p"):
                value = getattr(c.sampling, name)
                if value is not None and value != getattr(p, name):
                    problems.append(
                        f"{where}.sampling.{name}: {value:g}, but the run's profile used "
                        f"{getattr(p, name):g}"
                    )
        if c.thinking is not None and c.thinking != p.thinking:
            problems.append(
                f"{where}.thinking: {c.thinking}, but the run's profile had it {p.thinking}"
            )
    return problems


def energy_problems(result: BenchResult) -> list[str]:
    """Each cell's energy above zero, its mean draw over its requests' span within the rig's enforced
    limits and agreeing with its own power samples."""
    rig_limits = [
        g.power_enforced_limit_w
        for g in (result.conditions.rig.gpus if result.conditions.rig else [])
        if g.power_enforced_limit_w
    ]
    problems = []
    for i, cell in enumerate(result.cells):
        t = cell.telemetry
        if t.energy_j_total is None:
            continue
        where = f"cells.{i}.telemetry"
        if not t.energy_j_total > 0:
            problems.append(f"{where}.energy_j_total: must be above zero; got {t.energy_j_total!r}")
            continue
        sends = [r.sent_s for r in cell.requests]
        ends = [s for r in cell.requests for s in (r.done_s, r.last_token_s) if s is not None]
        if not sends or not ends or max(ends) <= min(sends):
            continue
        span = max(ends) - min(sends)
        if cell.mode == "sustained" and t.window_s:
            span = t.window_s  # energy is sampled over the window, which requests overlap
        draw = t.energy_j_total / span
        limits = rig_limits or [v for v in t.power_limit_w_per_gpu if v]
        if limits and draw > sum(limits) * MARGIN:
            problems.append(
                f"{where}.energy_j_total: {t.energy_j_total:g} J over its requests' {span:.3g} s is "
                f"a mean draw of {draw:,.0f} W; the rig's enforced limits allow {sum(limits):g} W"
            )
        sampled = t.power_draw_w_total_mean
        if sampled and abs(draw / sampled - 1) > ENERGY_TOLERANCE:
            problems.append(
                f"{where}.energy_j_total: {t.energy_j_total:g} J over its requests' {span:.3g} s is "
                f"a mean draw of {draw:,.0f} W, but its power samples average {sampled:,.0f} W"
            )
    return problems
