"""Prefix-cache readings: the engine's own word on how much of each prompt it served from cache.

Two readings are taken where the engine gives them:

- per response: ``usage.prompt_tokens_details.cached_tokens`` (llama-server always; vLLM with
  ``--enable-prompt-tokens-details``), else llama-server's ``timings.cache_n``;
- per cell: vLLM's ``vllm:prefix_cache_queries`` and ``vllm:prefix_cache_hits`` counters in
  ``/metrics`` (prompt tokens looked up in its prefix cache, and those found).

They are summed per turn and per cell and checked against what the workload sent: a cold turn
(nothing sent before shares its prompt beyond the chat template's opening) cannot be served from
cache, and no response can have more cached tokens than its prompt.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from rigbook.bench.metrics import distribution
from rigbook.bench.result import PrefixCache, RequestRecord, TurnStats

QUERIES, HITS = "vllm:prefix_cache_queries", "vllm:prefix_cache_hits"


class CacheCounters(BaseModel):
    """One reading of vLLM's prefix-cache counters (summed over label sets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queries: float
    hits: float


def parse_counters(families: Iterable) -> CacheCounters | None:
    """vLLM's prefix-cache counters from parsed /metrics families, or None where it has none.
    Read by sample name: the family's name depends on how the page spelled its TYPE line."""
    values: dict[str, float] = {}
    for fam in families:
        for sample in fam.samples:
            name = sample.name.removesuffix("_total")
            if name in (QUERIES, HITS):
                values[name] = values.get(name, 0.0) + sample.value
    if QUERIES not in values or HITS not in values:
        return None
    return CacheCounters(queries=values[QUERIES], hits=values[HITS])


def turn_stats(records: list[RequestRecord]) -> list[TurnStats]:
    """The figures of each turn number over a cell's completed session requests."""
    done = [r for r in records if r.ok and r.turn is not None and not r.warmup]
    stats = []
    for turn in sorted({r.turn for r in done if r.turn is not None}):
        of = [r for r in done if r.turn == turn]
        ttft = [
            1000.0 * (r.first_token_s - r.sent_s) if r.first_token_s is not None else None
            for r in of
        ]
        per_token = [
            t / r.prompt_tokens
            for t, r in zip(ttft, of, strict=True)
            if t is not None and r.prompt_tokens
        ]
        stats.append(
            TurnStats(
                turn=turn,
                requests=len(of),
                ttft_ms=distribution(ttft),
                prompt_tokens=distribution([r.prompt_tokens for r in of]),
                cached_prompt_tokens=distribution([r.cached_prompt_tokens for r in of]),
                ttft_ms_per_prompt_token=statistics.median(per_token) if per_token else None,
                per_request_decode_tok_s=distribution([r.decode_tok_s for r in of]),
            )
        )
    return stats


def prefix_cache(
    records: list[RequestRecord],
    *,
    cold: set[int],
    cold_head_tokens: int,
    before: CacheCounters | None,
    after: CacheCounters | None,
) -> PrefixCache:
    """A cell's prefix-cache readings; ``cold`` holds the turn numbers (1 first) whose requests
    nothing sent before could share beyond ``cold_head_tokens`` of the chat template."""
    done = [r for r in records if r.ok and not r.warmup]
    said = [r for r in done if r.cached_prompt_tokens is not None]
    both = [r for r in said if r.prompt_tokens is not None]
    prompt = sum(r.prompt_tokens or 0 for r in both) if both else None
    cached = sum(r.cached_prompt_tokens or 0 for r in both) if both else None
    cold_said = [r for r in said if r.turn in cold]
    contradictions = [
        f"request {r.index} (user {r.user}, turn {r.turn}): {r.cached_prompt_tokens} of its "
        f"{r.prompt_tokens} prompt tokens cached"
        for r in both
        if (r.cached_prompt_tokens or 0) > (r.prompt_tokens or 0)
    ]
    contradictions += [
        f"request {r.index} (user {r.user}, turn {r.turn}) is cold, yet "
        f"{r.cached_prompt_tokens} prompt tokens were cached (at most {cold_head_tokens} of "
        "the chat template's opening can be)"
        for r in cold_said
        if (r.cached_prompt_tokens or 0) > cold_head_tokens
    ]
    queries = hits = None
    if before is not None and after is not None:
        queries, hits = after.queries - before.queries, after.hits - before.hits
    return PrefixCache(
        responses=len(said),
        requests=len(done),
        prompt_tokens=prompt,
        cached_prompt_tokens=cached,
        hit_rate=cached / prompt if prompt and cached is not None else None,
        engine_queries=queries,
        engine_hits=hits,
        engine_hit_rate=hits / queries if queries and hits is not None else None,
        cold_requests=sum(1 for r in done if r.turn in cold),
        cold_cached_max=max((r.cached_prompt_tokens or 0 for r in cold_said), default=None),
        contradictions=contradictions,
    )


def has_reading(cache: PrefixCache) -> bool:
    """Whether the engine said anything about its prefix cache in the cell."""
    return cache.responses > 0 or cache.engine_queries is not None
