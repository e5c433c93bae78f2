"""End to end against the real embedded llama.cpp server with the quick profile."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from rigbook.bench.result import load_result
from tests.bench import helpers


def rigbook(*args: str) -> subprocess.CompletedProcess:
    """Minutes, not the synthetic server's seconds: a real model on a shared machine."""
    return helpers.rigbook(*args, timeout=600)


def test_quick_profile_against_llama_cpp(llama_server, tmp_path):
    url, model_id = llama_server
    out = tmp_path / "llama.json"
    p = rigbook(
        "bench", url, "--profile", "quick", "--concurrency", "1", "--out", str(out), "--json"
    )
    assert p.returncode == 0, p.stdout + p.stderr
    result = load_result(out)
    assert result.conditions.model == model_id
    cell = result.cells[0]
    assert cell.valid, cell.invalid_reasons
    assert cell.metrics.requests_ok == 2 and cell.metrics.per_request_decode_tok_s.p50 > 0
    assert cell.metrics.ttft_ms.p50 > 0 and cell.metrics.aggregate_tok_s > 0
    assert all(r.output_tokens >= 48 and r.finish_reason == "length" for r in cell.requests)
    # llama-cpp-python sends no usage in the stream: its chunks, one token each, are counted, labelled so.
    assert cell.token_count_source == "client_fallback"
    if cell.client_bound:
        # A loaded machine can stall the client beyond its limit: then the cell says why and
        # gives no perf point rather than a number the client may have distorted.
        assert cell.client.reason and result.perf_points == []
        return
    pp = result.perf_points[0]
    assert pp.concurrency == 1 and pp.conditions.reply_tokens == 48
    assert pp.conditions.token_count_source == "client_fallback" and pp.conditions.thinking is False
    rep = rigbook("report", str(out), "--out", str(tmp_path / "rep"), "--json")
    assert rep.returncode == 0, rep.stderr
    value = json.loads(rep.stdout)
    assert Path(value["report"]).is_file() and all(
        Path(x).stat().st_size > 1000 for x in value["plots"]
    )


def test_concurrency_the_server_cannot_hold_is_caught(llama_server, tmp_path):
    """A raw llama-cpp-python server (no --interrupt_requests False, which rigbook's launcher passes) cuts
    a running stream when a second request arrives: an empty or short stream, caught and invalid."""
    url, _ = llama_server
    out = tmp_path / "llama2.json"
    p = rigbook(
        "bench",
        url,
        "--profile",
        "quick",
        "--concurrency",
        "2",
        "--warmup",
        "0",
        "--out",
        str(out),
        "--json",
    )
    summary = json.loads(p.stdout)  # one JSON document, the error inside it
    result = load_result(out)
    assert p.returncode == 2 and summary["error"]["code"] == "E_BENCH_INVALID"
    assert any("empty" in r or "short" in r for r in result.cells[0].invalid_reasons)
    assert result.perf_points == []
