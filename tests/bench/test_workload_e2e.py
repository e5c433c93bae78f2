"""Session workloads against the real llama-server with the embedded model: the engine's own
readings show later turns and shared documents served from its prefix cache.

TTFT is compared only where the cache changes the work by a large factor (a whole document's
prefill, or a conversation several times the first turn's length); no rate is asserted."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from rigbook.bench.result import BenchResult, Cell, load_result
from rigbook.bench.workloads import get_workload
from rigbook.bench.workloads.sessions import Sessions
from tests.bench.test_speculation_e2e import MODEL_ID, llama_server_program, serving
from tests.conftest import embedded_model_path
from tests.in_process import rigbook_here

# Real engines on shared cores: a shared document's prefill alone takes minutes under load.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def llama_server(parallel: int):
    """The real llama-server with the embedded model, ``parallel`` slots, one thread (the cores
    are shared: more threads wait on each other)."""
    return serving(
        [
            llama_server_program(),
            "--model", str(embedded_model_path()), "--alias", MODEL_ID,
            "--parallel", str(parallel), "--threads", "1", "--threads-batch", "1",
            "--ctx-size", str(2048 * parallel), "--metrics", "--jinja",
        ],
        "llama-server",
    )  # fmt: skip


def bench(
    url: str, out: Path, workload: str, users: int, *options: str
) -> tuple[BenchResult, Cell]:
    # A queued request hears nothing until a slot takes it: the stall limit covers the queue.
    p = rigbook_here(
        "bench", url, "--model", MODEL_ID, "--profile", "quick", "--workload", workload,
        "--concurrency", str(users), "--stall-timeout", "600", "--out", str(out), "--json",
        *options,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    result = load_result(out)
    (cell,) = result.cells
    assert cell.metrics.requests_ok == cell.requests_planned, [r.error for r in cell.requests]
    return result, cell


def test_four_users_four_turns_later_turns_are_served_from_the_cache(tmp_path):
    with llama_server(4) as url:
        result, cell = bench(url, tmp_path / "chat.json", "multi-turn", 4)
    assert cell.workload == get_workload("multi-turn").ref().key()
    assert [t.turn for t in cell.turns] == [1, 2, 3, 4] and all(t.requests == 4 for t in cell.turns)
    cache = cell.prefix_cache
    # Every response said its cached tokens (llama-server's usage and timings).
    assert cache is not None and cache.responses == 16 and not cache.contradictions
    # Cold first turns: at most the chat template's opening.
    assert cache.cold_requests == 4 and cache.cold_cached_max <= Sessions.COLD_HEAD_TOKENS
    for r in cell.requests:
        if r.turn and r.turn > 1:
            assert r.cached_prompt_tokens and r.cached_prompt_tokens > 0, r
    first, *later = cell.turns
    assert all(t.cached_prompt_tokens.min > first.cached_prompt_tokens.max for t in later)
    # What a prompt token costs to the first token falls as the cache serves more of them.
    assert later[-1].ttft_ms_per_prompt_token < first.ttft_ms_per_prompt_token
    assert (
        statistics.median(t.ttft_ms_per_prompt_token for t in later)
        < first.ttft_ms_per_prompt_token
    )
    assert not any(
        w.code in ("W_PREFIX_CACHE_CHECK", "W_PREFIX_CACHE_NONE") for w in result.warnings
    )


def test_a_shared_document_is_served_from_cache_and_unique_ones_are_not(tmp_path):
    # One slot: the second user's first question waits for the first's, so a document they
    # share is in the cache by then (concurrent first turns in different slots share nothing).
    # Short replies: what is read is the prompts' cache, and a reply is part of no later prompt.
    with llama_server(1) as url:
        _, shared = bench(url, tmp_path / "shared.json", "shared-prefix", 2, "--max-tokens", "8")
        _, unique = bench(url, tmp_path / "unique.json", "unique-prefix", 2, "--max-tokens", "8")
    words = get_workload("shared-prefix").prefix_words
    s_first = sorted(r.cached_prompt_tokens or 0 for r in shared.requests if r.turn == 1)
    u_first = [r.cached_prompt_tokens or 0 for r in unique.requests if r.turn == 1]
    # Shared: one user took the document in, the other found it cached.
    assert s_first[0] <= Sessions.COLD_HEAD_TOKENS and s_first[1] >= words
    # Unique: both first questions cold.
    assert max(u_first) <= Sessions.COLD_HEAD_TOKENS
    assert shared.prefix_cache and unique.prefix_cache
    assert shared.prefix_cache.cached_prompt_tokens > unique.prefix_cache.cached_prompt_tokens
    # The second user waited for one document's prefill, not two.
    assert shared.turns[0].ttft_ms.max < unique.turns[0].ttft_ms.max
