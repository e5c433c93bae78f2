"""The server-side cross-check: engine counters read around each cell, on the synthetic server."""

from __future__ import annotations

import threading

import httpx
import pytest

from rigbook.bench.server_metrics import compare, parse
from rigbook_testkit.synthetic_record import Counters
from tests.bench.helpers import measure_bench, synthetic_server


@pytest.mark.parametrize(
    "flavor, engine, histogram",
    [("vllm", "vllm", True), ("sglang", "sglang", True), ("llamacpp", "llama.cpp", False)],
)
def test_each_engines_counter_names_are_read(flavor, engine, histogram):
    counters = Counters()
    before = parse(counters.render(flavor).decode())
    counters.add_tokens(120)
    counters.add_request(prompt_tokens=7, ttft_s=0.03)
    counters.add_request(prompt_tokens=7, ttft_s=0.05)
    after = parse(counters.render(flavor).decode())
    assert before.engine == after.engine == engine
    counts = compare(before, after, client_tokens=120, client_prompt_tokens=14, judged=True)
    assert counts.generation_tokens == 120 and counts.prompt_tokens == 14 and not counts.mismatch
    if histogram:
        assert counts.ttft_requests == 2 and counts.ttft_ms_mean == pytest.approx(40.0)
        assert 20.0 <= counts.ttft_ms_p50 <= 40.0  # interpolated inside the (20, 40] ms bucket
    else:
        assert counts.ttft_requests is None and counts.ttft_ms_p50 is None
    assert compare(
        before, after, client_tokens=118, client_prompt_tokens=None, judged=True
    ).mismatch
    assert not compare(
        before, after, client_tokens=118, client_prompt_tokens=None, judged=False
    ).mismatch


def test_a_page_without_engine_counters_is_no_cross_check():
    assert (
        parse("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n") is None
    )


@pytest.fixture(scope="module")
def url():
    with synthetic_server("--rate 150 --tokens-per-chunk 2 --falloff 0") as base:
        yield base


def test_the_servers_count_sits_beside_the_clients(url, tmp_path):
    done = measure_bench(url, tmp_path / "r.json", concurrency=[1, 3], requests=3, max_tokens=60)
    for cell in done.result.cells:
        server = cell.server
        assert server is not None and server.engine == "vllm" and server.judged
        assert server.generation_tokens == server.client_tokens == 180 and server.difference == 0
        assert server.ttft_requests == 3 and not server.mismatch
        assert server.client_prompt_tokens == server.prompt_tokens
    assert not any(w.code == "W_SERVER_COUNT" for w in done.result.warnings)


def test_tokens_the_client_did_not_see_mark_the_cell(url, tmp_path):
    """Someone else's request during the cell: the engine counted more than the client did."""
    others: list[threading.Thread] = []

    def intrude(event: str, data: dict) -> None:
        if event == "cell":
            body = {
                "model": "synthetic",
                "max_tokens": 30,
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            }
            t = threading.Thread(
                target=lambda: httpx.post(url + "/v1/chat/completions", json=body, timeout=30)
            )
            t.start()
            others.append(t)

    done = measure_bench(
        url, tmp_path / "r.json", progress=intrude, concurrency=[1], requests=1, max_tokens=120
    )
    for t in others:
        t.join()
    server = done.result.cells[0].server
    assert server.generation_tokens == 150 and server.client_tokens == 120 and server.mismatch
    assert any(w.line.startswith("W_SERVER_COUNT: cell 0") for w in done.result.warnings)
