"""Trace replay and dataset prompts on the real llama-server with the embedded model.

A trace whose requests share blocks is replayed against one slot: the engine's own prompt counter
(`llamacpp:prompt_tokens_total`, the tokens it evaluated) shows it served the shared blocks from
its cache; the same trace without shared blocks shows it did not. Each prompt is the trace's exact
input length by the engine's count.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbook.bench.result import BenchResult, load_result
from tests.bench.test_speculation_e2e import MODEL_ID, llama_server_program, serving
from tests.conftest import embedded_model_path
from tests.in_process import rigbook_here

pytestmark = pytest.mark.e2e

BLOCK = 32
N = 8


@pytest.fixture(scope="module")
def url():
    # One slot: each request's prompt is compared with the one before it, so what is shared is
    # known exactly.
    with serving(
        [
            llama_server_program(),
            "--model", str(embedded_model_path()), "--alias", MODEL_ID, "--parallel", "1",
            "--threads", "1", "--threads-batch", "1", "--ctx-size", "2048", "--metrics", "--jinja",
        ],
        "llama-server-trace",
    ) as u:  # fmt: skip
        yield u


def _bench(url: str, out: Path, *options: str) -> BenchResult:
    args = ["bench", url, "--model", MODEL_ID, "--profile", "quick", "--warmup", "0"]
    p = rigbook_here(*args, *options, "--out", str(out), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    return load_result(out)


def _replay(url: str, tmp_path: Path, shared: bool) -> BenchResult:
    rows = [
        {
            "timestamp": i * 250,
            "input_length": 2 * BLOCK + 40 + i,
            "output_length": 4,
            "hash_ids": [1, 2] if shared else [],
        }
        for i in range(N)
    ]
    file = tmp_path / f"trace-{shared}.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return _bench(
        url, tmp_path / f"r-{shared}.json", "--workload", f"trace:{file}",
        "--block-tokens", str(BLOCK), "--speed", "2", "--max-lag-ms", "1000",
    )  # fmt: skip


def test_a_trace_replay_makes_exact_prompts_and_the_cache_serves_the_shared_blocks(url, tmp_path):
    shared = _replay(url, tmp_path, shared=True)
    alone = _replay(url, tmp_path, shared=False)
    for result in (shared, alone):
        cell = result.cells[0]
        assert cell.valid and cell.trace is not None and cell.trace.lag is not None
        assert cell.trace.prompt_tokens_exact == N, "every prompt the trace's exact length"
        print(
            f"llama-server trace replay: lag p50 {cell.trace.lag.p50_ms:.2f} ms, "
            f"p99 {cell.trace.lag.p99_ms:.2f} ms; engine evaluated "
            f"{cell.server.prompt_tokens if cell.server else None} of "
            f"{cell.server.client_prompt_tokens if cell.server else None} prompt tokens"
        )
    sent = sum(2 * BLOCK + 40 + i for i in range(N))
    s, a = shared.cells[0].server, alone.cells[0].server
    assert s is not None and a is not None and s.prompt_tokens is not None
    assert s.client_prompt_tokens == a.client_prompt_tokens == sent
    # Shared: every request after the first finds both blocks in the slot's cache.
    assert s.prompt_tokens <= sent - (N - 1) * 2 * BLOCK
    # Alone: only the chat template's opening is common, far less than one block.
    assert a.prompt_tokens is not None and a.prompt_tokens > sent - (N - 1) * BLOCK


def test_a_sharegpt_file_runs(url, tmp_path):
    rows = [
        {
            "conversations": [
                {"from": "human", "value": f"Name {i + 2} colours of the rainbow, briefly."},
                {"from": "gpt", "value": "Red, orange."},
            ]
        }
        for i in range(6)
    ]
    file = tmp_path / "sharegpt.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = _bench(
        url, tmp_path / "sg.json", "--workload", f"dataset:{file}", "--dataset-size", "3",
        "--concurrency", "1", "--requests", "3",
    )  # fmt: skip
    named = result.conditions.workload
    assert named is not None and named.kind == "dataset"
    assert result.cells[0].valid and len(result.cells[0].requests) == 3
