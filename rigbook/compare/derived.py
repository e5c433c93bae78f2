"""Figures derived from one perf point, each computed only where it is valid.

- decode tok/s per GPU: aggregate decode / GPU count (GPU count known and at least 1).
- tok/s per W: 1 / measured energy per output token (tokens per joule equals tok/s per W
  over the same window). Never from a power limit: a limit is a cap, not a draw.
- memory-bandwidth ceiling: a decode step reads the active weights once and each
  sequence's KV cache, so aggregate decode at concurrency N is at most
  N x bandwidth / (active params x bytes per param + N x KV bytes per token).
"""

from __future__ import annotations

from rigbook.compare.hardware import bandwidth_gb_s
from rigbook.compare.weights import model_facts, quant_format
from rigbook.comparison import ComparedPoint, Derived, Roofline

NO_SPECULATION = {"none", "off", "no"}


def per_gpu(point: ComparedPoint) -> float | None:
    """Decode tok/s per GPU, when both numbers are known."""
    gpus = point.conditions.gpu_count
    return point.decode_tok_s / gpus if point.decode_tok_s is not None and gpus else None


def tok_s_per_w(point: ComparedPoint) -> tuple[float | None, str | None]:
    """Tokens per joule from measured energy, or why there is none."""
    energy = point.conditions.energy_j_per_token
    if energy is None:
        reason = "no measured energy"
        if point.conditions.power_limit_w_per_gpu is not None:
            reason += " (a power limit is a cap, not a draw)"
        return None, reason
    if energy <= 0:
        return None, "measured energy per token is zero"
    return 1.0 / energy, None


def roofline(point: ComparedPoint, model: str | None) -> tuple[Roofline | None, str | None]:
    """Decode against the memory-bandwidth ceiling, or why it cannot be bounded."""
    c = point.conditions
    facts = model_facts(model)
    if point.decode_tok_s is None:
        return None, "no decode number"
    if facts is None or facts.active_params is None:
        return None, f"active parameters of {model or 'the model'} unknown (no source states them)"
    quant = quant_format(c.quant)
    if quant is None:
        return None, f"bytes per parameter of quantisation {c.quant!r} unknown"
    if c.gpu_count == 0:
        return None, "no GPU (ran on the CPU): the ceiling is a GPU memory-bandwidth bound"
    if not c.gpu_count or not c.card:
        return None, "no GPU card known"
    bandwidth, how = bandwidth_gb_s(c.card)
    if bandwidth is None:
        return None, how
    method = (c.speculative_method or "").lower()
    if c.speculative_method and method not in NO_SPECULATION:
        return (
            None,
            f"speculative decoding ({c.speculative_method}) can emit several tokens per weight read, so the ceiling bounds nothing",
        )
    assumptions = [
        how,
        f"{facts.active_params:,} active params ({facts.source})",
        f"{c.quant}: {quant.bytes_per_param:g} B/param ({quant.source})",
    ]
    if not c.speculative_method:
        assumptions.append(
            "speculative method unknown: the ceiling holds only without speculative decoding"
        )
    kv_per_token = 0.0
    kv = quant_format(c.kv_cache_dtype)
    if facts.kv_elements_per_token and kv and point.context_len:
        kv_per_token = facts.kv_elements_per_token * kv.bytes_per_param * point.context_len
        assumptions.append(
            f"KV read: {point.context_len} context tokens x {facts.kv_elements_per_token} elements x {kv.bytes_per_param:g} B"
        )
    else:
        assumptions.append(
            "KV cache read not counted (context length, KV type or layout unknown): the ceiling is looser, still an upper bound"
        )
    weights = facts.active_params * quant.bytes_per_param
    n = point.concurrency or 1
    total_bw = bandwidth * c.gpu_count
    ceiling = n * total_bw * 1e9 / (weights + n * kv_per_token)
    return Roofline(
        active_params=facts.active_params,
        bytes_per_param=quant.bytes_per_param,
        weight_bytes_per_step=weights,
        kv_bytes_per_token_read=kv_per_token,
        bandwidth_gb_s_total=total_bw,
        ceiling_tok_s=ceiling,
        pct_of_ceiling=100.0 * point.decode_tok_s / ceiling,
        assumptions=assumptions,
    ), None


def derive(point: ComparedPoint, model: str | None) -> Derived:
    """Every derived figure of one point."""
    tpw, no_tpw = tok_s_per_w(point)
    roof, no_roof = roofline(point, model)
    return Derived(
        decode_tok_s_per_gpu=per_gpu(point),
        tok_s_per_w=tpw,
        tok_s_per_w_unavailable=no_tpw,
        roofline=roof,
        roofline_unavailable=no_roof,
    )
