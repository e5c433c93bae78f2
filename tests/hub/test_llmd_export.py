"""A published result read back in the llm-d Benchmark Report v0.2 schema.

The result is built with the bench's own code from requests whose timings are set by hand, so the
expected numbers below are worked out from those timings, not read back from rigbook's metrics.
"""

from __future__ import annotations

import pytest

from rigbook.bench.assemble import assemble
from rigbook.bench.metrics import build_cell
from rigbook.bench.result import BenchResult, CellTelemetry, RequestRecord, RunTelemetry
from rigbook.hub.llmd import REPORTS, llmd_reports
from rigbook.rig.model import GpuSummary
from tests.hub.helpers import SMALL_SLUG, make_result

MAX_TOKENS = 400  # the helper's profile holds replies to 400 tokens


def request(index: int, ttft_s: float, decode_s: float, prompt: int, ok: bool = True):
    """One streamed reply of MAX_TOKENS tokens sent at 0: the first token after ``ttft_s``, the
    other 399 over ``decode_s``, the stream closed 10 ms after the last token."""
    last = ttft_s + decode_s
    return RequestRecord(
        cell=0,
        index=index,
        prompt_index=index,
        sent_s=0.0,
        first_token_s=ttft_s,
        first_content_s=ttft_s,
        last_token_s=last,
        done_s=last + 0.01,
        prompt_tokens=prompt,
        output_tokens=MAX_TOKENS if ok else 0,
        first_chunk_tokens=1.0,
        chunks=MAX_TOKENS,
        token_source="server_continuous",
        finish_reason="length",
        ok=ok,
        error=None if ok else "connection reset",
        decode_tok_s=(MAX_TOKENS - 1) / decode_s,
        itl_ms_mean=1000.0 * decode_s / (MAX_TOKENS - 1),
    )


def cell(index: int, concurrency: int, records: list[RequestRecord]):
    return build_cell(
        index=index,
        mode="burst",
        concurrency=concurrency,
        records=[r.model_copy(update={"cell": index}) for r in records],
        requests_planned=len(records),
        duration_s=None,
        window=None,
        telemetry=CellTelemetry(available=False, reason="built by a test"),
        client=None,
        cut_short=False,
    )


@pytest.fixture
def result() -> BenchResult:
    """Two cells: at concurrency 2, replies with TTFTs of 50 and 150 ms decoding at 100 and 50
    tok/s (prompts of 100 and 120 tokens); at concurrency 1, a failed request (an invalid cell)."""
    base = make_result()
    cells = [
        cell(0, 2, [request(0, 0.05, 3.99, 100), request(1, 0.15, 7.98, 120)]),
        cell(1, 1, [request(0, 0.05, 3.99, 100, ok=False)]),
    ]
    return assemble(
        base.conditions,
        cells,
        RunTelemetry(available=False, reason="built by a test"),
        warnings=[],
        journal=None,
        extra={"quant": "Q4_1"},
    )


def test_a_published_result_reads_back_as_llmd_reports(hub, result):
    posted = hub.client.post(
        f"/api/v1/recipes/{SMALL_SLUG}/results",
        json=result.model_dump(mode="json"),
        headers=hub.auth,
    )
    assert posted.status_code == 201, posted.text
    url = f"/api/v1/recipes/{SMALL_SLUG}/results/{result.content_hash}.json"

    answer = hub.client.get(url, params={"format": "llm-d"})
    assert answer.status_code == 200, answer.text
    (report,) = REPORTS.validate_json(answer.content)  # the invalid cell gives no report
    assert report.version == "0.2"
    assert report.run.eid == result.content_hash
    assert report.run.uid == f"{result.content_hash}/cell-0"

    perf = report.results.request_performance.aggregate
    ttft = perf.latency.time_to_first_token
    assert ttft is not None and ttft.units == "s"
    assert ttft.p50 == pytest.approx(0.100)  # the median of 0.05 s and 0.15 s
    assert ttft.min == pytest.approx(0.05) and ttft.max == pytest.approx(0.15)
    tpot = perf.latency.time_per_output_token
    assert tpot is not None and tpot.units == "s/token"
    assert tpot.mean == pytest.approx((3.99 + 7.98) / 2 / 399)  # 10 and 20 ms a token
    latency = perf.latency.request_latency
    assert latency is not None and latency.mean == pytest.approx((4.05 + 8.14) / 2)
    rate = perf.throughput.output_token_rate
    # A burst's rate: every token of its replies over first send to last token.
    assert rate is not None and rate.units == "tokens/s"
    assert rate.mean == pytest.approx(2 * MAX_TOKENS / 8.13)
    assert (perf.requests.total, perf.requests.failures) == (2, 0)
    assert perf.requests.input_length is not None and perf.requests.input_length.mean == 110

    assert report.scenario is not None and report.scenario.load is not None
    load = report.scenario.load.standardized
    assert load.concurrency == 2
    assert (load.input_seq_len.distribution, load.input_seq_len.value) == ("other", 110)
    assert (load.input_seq_len.min, load.input_seq_len.max) == (100, 120)
    assert load.output_seq_len is not None and load.output_seq_len.value == MAX_TOKENS
    assert (load.tool, load.source) == ("rigbook", "sampled")
    (engine,) = report.scenario.stack or []
    assert engine.standardized.kind == "inference_engine"
    assert engine.standardized.model.name == "smollm2-135m-instruct"
    assert (engine.standardized.tool, engine.standardized.tool_version) == ("llama.cpp", "0.3.36")
    assert engine.standardized.accelerator.model == "NVIDIA H200"
    assert engine.standardized.accelerator.count == 1

    # Fields rigbook does not fill are left out, not sent as null.
    assert "null" not in answer.text
    assert hub.client.get(url).json()["content_hash"] == result.content_hash  # rigbook's own


def test_an_unknown_format_is_refused_with_its_remedy(hub):
    url = f"/api/v1/recipes/{SMALL_SLUG}/results/sha256:{'0' * 64}.json"
    answer = hub.client.get(url, params={"format": "csv"})
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "E_INPUT"
    assert "format=llm-d" in error["remedy"]
    missing = hub.client.get(url, params={"format": "llm-d"})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "E_RECIPE_NOT_FOUND"


def test_a_client_bound_cell_gives_no_report(result):
    # Its numbers measure the client that could not keep up, as for perf points.
    bound = [c.model_copy(update={"client_bound": True}) for c in result.cells]
    assert len(llmd_reports(result)) == 1
    assert llmd_reports(result.model_copy(update={"cells": bound})) == []


def test_several_gpus_are_a_generic_component_and_a_rigless_result_has_no_stack(result):
    rig = result.conditions.rig
    assert rig is not None
    two = rig.model_copy(
        update={"gpus": [*rig.gpus, GpuSummary(**{**rig.gpus[0].model_dump(), "index": 1})]}
    )
    on_two = result.model_copy(
        update={"conditions": result.conditions.model_copy(update={"rig": two})}
    )
    (report,) = llmd_reports(on_two)
    assert report.scenario is not None and report.scenario.stack is not None
    standardized = report.scenario.stack[0].standardized
    # The split over two GPUs (tensor or pipeline) is not in the result: no parallelism is claimed.
    assert standardized.kind == "generic"
    assert standardized.accelerator.count == 2

    rigless = result.model_copy(
        update={"conditions": result.conditions.model_copy(update={"rig": None})}
    )
    (report,) = llmd_reports(rigless)
    assert report.scenario is not None and report.scenario.stack is None
    assert report.scenario.load is not None


@pytest.mark.parametrize(
    "stored",
    [
        '{"kind": "rigbook.capacity", "schema_version": 1}',  # a capacity result shares the table
        '{"kind": "rigbook.bench", "cells": "not cells"}',  # a body this rigbook no longer reads
        "[1, 2]",
    ],
)
def test_a_stored_result_with_no_llmd_form_is_refused_by_name_not_a_500(hub, monkeypatch, stored):
    import rigbook.hub.reproduction_api

    monkeypatch.setattr(rigbook.hub.reproduction_api, "stored_result", lambda s, slug, h: stored)
    url = f"/api/v1/recipes/{SMALL_SLUG}/results/sha256:{'1' * 64}.json"
    answer = hub.client.get(url, params={"format": "llm-d"})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "E_INPUT" and "format=rigbook" in error["remedy"]
    assert hub.client.get(url).text == stored  # rigbook's own form is served as stored
