"""Whether a bench result may join a recipe: its hash checks out and every point has its conditions.

A number without its GPU count, card, enforced power limit per card (for GPU
results), engine, quantisation, sampling, reply length, concurrency and
token-count source is not published (DESIGN.md, "Results keep their conditions").
"""

from __future__ import annotations

from rigbook.bench.result import BenchResult, verify_hash


def result_problems(result: BenchResult, slug: str) -> list[str]:
    """Every reason to refuse ``result`` for recipe ``slug``, one line each (empty: accept)."""
    problems = []
    if not verify_hash(result):
        problems.append("content_hash: does not match the result's content (edited after the run, or missing)")
    named = result.conditions.recipe_slug
    if named is not None and named != slug:
        problems.append(f"conditions.recipe_slug: the result was measured for {named!r}, not {slug!r}")
    if result.conditions.rig is not None:
        for gpu in result.conditions.rig.gpus:
            if gpu.power_enforced_limit_w is None:
                problems.append(f"conditions.rig.gpus.{gpu.index}.power_enforced_limit_w: missing (the card's enforced power limit)")
    if not result.perf_points:
        problems.append("perf_points: the result has no perf points")
    for i, point in enumerate(result.perf_points):
        where = f"perf_points.{i}"
        if point.decode_tok_s is None:
            problems.append(f"{where}.decode_tok_s: missing")
        if point.concurrency is None:
            problems.append(f"{where}.concurrency: missing")
        c = point.conditions
        if c is None:
            problems.append(f"{where}.conditions: missing (GPU count, card, power, engine, quant, sampling, reply length, token source)")
            continue
        required = {"gpu_count": c.gpu_count, "engine": c.engine, "quant": c.quant, "reply_tokens": c.reply_tokens,
                    "token_count_source": c.token_count_source}
        if c.gpu_count:
            required |= {"card": c.card, "power_limit_w_per_gpu": c.power_limit_w_per_gpu}
        problems += [f"{where}.conditions.{name}: missing" for name, value in required.items() if value is None]
        if c.sampling is None or c.sampling.temperature is None or c.sampling.top_p is None:
            problems.append(f"{where}.conditions.sampling: temperature and top_p are required")
    return problems
