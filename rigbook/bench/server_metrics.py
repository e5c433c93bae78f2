"""The server-side cross-check: the engine's own Prometheus counters read before and after a cell.

vLLM, SGLang and llama-server count the tokens they generate and the prompt tokens they
take in; vLLM and SGLang also keep a TTFT histogram. Their differences across a cell are
recorded beside the client's own figures. A generation count that differs from the
client's by more than 1 % marks the cell ``W_SERVER_COUNT``: either the client lost or
miscounted tokens, or someone else used the server during the cell.
"""

from __future__ import annotations

import math

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.result import ServerCounts, Speculation
from rigbook.bench.speculation import SpecCounters, over_cell
from rigbook.bench.speculation import parse as parse_speculation
from rigbook.bench.workloads.cache import CacheCounters
from rigbook.bench.workloads.cache import parse_counters as parse_prefix_cache

# engine -> (generated tokens, prompt tokens, TTFT histogram or None), as each engine names them
ENGINES: dict[str, tuple[str, str, str | None]] = {
    "vllm": ("vllm:generation_tokens", "vllm:prompt_tokens", "vllm:time_to_first_token_seconds"),
    "sglang": (
        "sglang:generation_tokens",
        "sglang:prompt_tokens",
        "sglang:time_to_first_token_seconds",
    ),
    "llama.cpp": ("llamacpp:tokens_predicted", "llamacpp:prompt_tokens", None),
}
TOLERANCE = 0.01


class Snapshot(BaseModel):
    """One reading of an engine's counters (summed over label sets, e.g. several models)."""

    model_config = ConfigDict(extra="forbid")

    engine: str
    generation_tokens: float
    prompt_tokens: float | None = None
    ttft_buckets: list[tuple[float, float]] = []  # (upper bound s, cumulative count)
    ttft_sum_s: float | None = None
    ttft_count: float | None = None
    speculation: SpecCounters | None = Field(
        default=None, description="Drafted and accepted tokens, where a speculator is counted."
    )
    prefix_cache: CacheCounters | None = Field(
        default=None, description="vLLM's prefix-cache queries and hits, where it counts them."
    )


def parse(text: str) -> Snapshot | None:
    """The counters of the first engine whose names appear in a /metrics page, or None."""
    values: dict[str, float] = {}
    buckets: dict[float, float] = {}
    families = list(text_string_to_metric_families(text))
    for engine, (gen, prompt, ttft) in ENGINES.items():
        found = False
        for fam in families:
            # prometheus_client strips "_total" from counter family names.
            if fam.name in (gen, prompt) or (ttft and fam.name == ttft):
                found = found or fam.name == gen
                for sample in fam.samples:
                    if sample.name in (gen + "_total", prompt + "_total"):
                        values[sample.name] = values.get(sample.name, 0.0) + sample.value
                    elif ttft and sample.name == ttft + "_bucket":
                        le = float(sample.labels["le"])
                        buckets[le] = buckets.get(le, 0.0) + sample.value
                    elif ttft and sample.name in (ttft + "_sum", ttft + "_count"):
                        values[sample.name] = values.get(sample.name, 0.0) + sample.value
        if found:
            return Snapshot(
                engine=engine,
                generation_tokens=values.get(gen + "_total", 0.0),
                prompt_tokens=values.get(prompt + "_total"),
                ttft_buckets=sorted(buckets.items()),
                ttft_sum_s=values.get(f"{ttft}_sum") if ttft else None,
                ttft_count=values.get(f"{ttft}_count") if ttft else None,
                speculation=parse_speculation(engine, families),
                prefix_cache=parse_prefix_cache(families),
            )
    return None


async def read(client: httpx.AsyncClient, base_url: str) -> Snapshot | None:
    """The engine's counters now, or None where it exposes none we know (or no /metrics)."""
    try:
        resp = await client.get(base_url.rstrip("/") + "/metrics", timeout=5.0)
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    try:
        return parse(resp.text)
    except ValueError:  # not Prometheus text: a server whose /metrics is something else
        return None


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """A quantile from cumulative histogram buckets, interpolated inside the bucket, as
    Prometheus' histogram_quantile does."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            width = count - lower_count
            return lower_bound + (bound - lower_bound) * (
                (rank - lower_count) / width if width else 0.0
            )
        lower_bound, lower_count = bound, count
    return None


def compare(
    before: Snapshot | None,
    after: Snapshot | None,
    *,
    client_tokens: int,
    client_prompt_tokens: int | None,
    judged: bool,
) -> ServerCounts | None:
    """The server's counts over a cell beside the client's; ``judged`` is False where the two
    cannot agree by design (a sustained window cuts streams the server goes on generating)."""
    if before is None or after is None or before.engine != after.engine:
        return None
    generated = after.generation_tokens - before.generation_tokens
    prompt = (
        after.prompt_tokens - before.prompt_tokens
        if after.prompt_tokens is not None and before.prompt_tokens is not None
        else None
    )
    diff = (client_tokens - generated) / generated if generated > 0 else None
    ttft_mean = ttft_p50 = ttft_n = None
    if after.ttft_count is not None and before.ttft_count is not None:
        ttft_n = after.ttft_count - before.ttft_count
        if ttft_n > 0 and after.ttft_sum_s is not None and before.ttft_sum_s is not None:
            ttft_mean = 1000.0 * (after.ttft_sum_s - before.ttft_sum_s) / ttft_n
        earlier = dict(before.ttft_buckets)
        delta = [(le, count - earlier.get(le, 0.0)) for le, count in after.ttft_buckets]
        p50 = _quantile(0.5, delta)
        ttft_p50 = 1000.0 * p50 if p50 is not None else None
    mismatch = judged and (
        (generated <= 0 and client_tokens > 0) or (diff is not None and abs(diff) > TOLERANCE)
    )
    return ServerCounts(
        engine=after.engine,
        generation_tokens=generated,
        prompt_tokens=prompt,
        client_tokens=client_tokens,
        client_prompt_tokens=client_prompt_tokens,
        difference=diff,
        judged=judged,
        mismatch=mismatch,
        ttft_requests=ttft_n,
        ttft_ms_mean=ttft_mean,
        ttft_ms_p50=ttft_p50,
    )


def acceptance(before: Snapshot | None, after: Snapshot | None) -> Speculation | None:
    """A cell's drafted and accepted tokens from two readings of one engine, or None where the
    engine counts none."""
    if before is None or after is None or before.engine != after.engine:
        return None
    return over_cell(after.engine, before.speculation, after.speculation)
