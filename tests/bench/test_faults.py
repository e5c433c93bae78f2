"""The reporting faults of issue 16, each with the test that failed before its fix."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest
from rich.console import Console

from rigbook.bench.metrics import build_cell, to_record
from rigbook.bench.progress import result_table
from rigbook.bench.result import CellTelemetry, ClientLoad, Distribution, load_result
from rigbook.bench.scheduler import judge_client
from rigbook.openai.stream import RawRequest
from tests.bench.helpers import bench, measure_bench, streamed, synthetic_server


@pytest.fixture(scope="module")
def url():
    with synthetic_server("--rate 100 --tokens-per-chunk 1 --stall-s 1 --fault-every 1") as base:
        yield base


def test_table_fits_80_columns_whatever_the_status(url, tmp_path):
    """A client_bound or invalid status used to widen the table past 80 columns."""
    result = bench(url, tmp_path / "r.json", concurrency=[1], requests=1, max_tokens=5)
    cell = result.cells[0].model_copy(update={"concurrency": 4096})
    cell = cell.model_copy(
        update={
            "metrics": cell.metrics.model_copy(
                update={
                    "requests_ok": 4000,
                    "requests_failed": 96,
                    # just under 100: once printed "100.0", a column wider than any other value
                    "per_request_decode_tok_s": Distribution(n=9, p10=99.96, p50=99.97, p90=99.98),
                }
            )
        }
    )
    # The widest energy figure a GPU cell shows.
    cell = cell.model_copy(
        update={"telemetry": cell.telemetry.model_copy(update={"energy_j_per_token": 12.345})}
    )
    cells = [
        cell.model_copy(update={"client_bound": True}),
        cell.model_copy(update={"valid": False, "client_bound": True}),
        cell.model_copy(update={"valid": False, "cut_short": True}),
    ]
    with open(os.devnull, "w") as devnull:
        console = Console(width=80, record=True, file=devnull)
        console.print(result_table(result.model_copy(update={"cells": cells})))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines)
    rows = [ln for ln in lines if ln.lstrip().startswith("4096")]
    assert len(rows) == 3 and "…" not in "".join(rows)
    assert {"client", "invalid", "cut"} <= {ln.split()[-1] for ln in rows}
    assert all(" 96 " in ln and "12.35" in ln for ln in rows)


@pytest.mark.parametrize(
    ("model", "error"), [("synthetic-error", "in_band_error"), ("synthetic-drop", "dropped")]
)
def test_an_all_failing_warmup_is_an_engine_error_with_result_and_journal(
    url, tmp_path, model, error
):
    """The server answers 200 and then errors in band or breaks the stream: E_ENGINE_ERROR (not
    E_HTTP, whose remedy is about HTTP), and the failures are written, where before nothing was."""
    out = tmp_path / "r.json"
    done = measure_bench(
        url, out, model=model, concurrency=[1], requests=1, max_tokens=20, warmup=2
    )
    assert done.verdict is not None and done.verdict.code == "E_ENGINE_ERROR"
    assert "HTTP" not in done.verdict.error().remedy
    result = load_result(out)
    assert result.cells == [] and len(result.warmup) == 2
    assert all(not r.ok and r.error.startswith(error) for r in result.warmup), result.warmup
    kinds = [json.loads(line)["type"] for line in done.journal_path.read_text().splitlines()]
    assert kinds.count("request") == 2 and kinds[-1] == "end"


def test_a_dead_server_is_never_client_bound():
    """A cell whose every request failed streamed nothing: the client cannot have been the limit,
    however late its loop woke."""
    failed = [
        to_record(
            RawRequest(sent=0.0),
            cell=0,
            index=i,
            prompt_index=0,
            t0=0.0,
            max_tokens=10,
            hold_length=True,
        )
        for i in range(4)
    ]
    for r in failed:
        assert not r.ok
    load = ClientLoad(
        loop_lag_ms=Distribution(n=1, max=500.0),
        loop_lag_worst_ms=500.0,
        cpu_s=1.0,
        wall_s=1.0,
        cpu_fraction=1.0,
        client_bound=False,
    )
    assert judge_client(load, failed).client_bound is False
    ok = [
        to_record(
            streamed(20), cell=0, index=0, prompt_index=0, t0=0.0, max_tokens=20, hold_length=True
        )
    ]
    assert judge_client(load, ok).client_bound is True


def test_token_source_comes_from_the_requests_that_completed():
    """Connect failures carry no usage; they used to label the cell client_fallback."""
    good = [
        to_record(
            streamed(20), cell=0, index=i, prompt_index=0, t0=0.0, max_tokens=20, hold_length=True
        )
        for i in range(3)
    ]
    refused = RawRequest(sent=0.0)
    refused.error = "connect: ConnectionRefusedError"
    bad = to_record(
        refused, cell=0, index=3, prompt_index=0, t0=0.0, max_tokens=20, hold_length=True
    )
    assert bad.token_source == "client_fallback"
    cell = build_cell(
        index=0,
        mode="burst",
        concurrency=4,
        records=[*good, bad],
        requests_planned=4,
        duration_s=None,
        window=None,
        telemetry=CellTelemetry(available=False),
        client=None,
        cut_short=False,
    )
    assert cell.token_count_source == "server_continuous" and not cell.valid


def test_perf_points_say_which_rate_they_hold(url, tmp_path):
    """At one request the aggregate includes TTFT; the point says so, beside the other rate."""
    from rigbook.bench.assemble import perf_point

    result = bench(url, tmp_path / "r.json", concurrency=[1], requests=1, max_tokens=40)
    # Built from the cell itself: a loaded machine may flag it client_bound and publish no point.
    point = perf_point(result.cells[0], result.conditions, {})
    assert point.conditions.rate_definition == "aggregate_with_ttft"
    assert point.per_request_decode_tok_s_median > point.decode_tok_s


class _OneWattReader:
    """A GPU whose energy counter runs at exactly 1 W, on the clock the bench uses."""

    source = "test:1W"

    def gpu_count(self) -> int:
        return 1

    def name(self, i: int) -> str:
        return "test GPU"

    def power_limit_w(self, i: int) -> float:
        return 100.0

    def sample(self, i: int):
        from rigbook.bench.telemetry import Sample

        return Sample(t=time.time(), power_w=1.0)

    def energy_mj(self, i: int) -> float:
        return time.perf_counter() * 1000.0


def test_energy_per_token_counts_only_the_token_window(url, tmp_path):
    """In sustained mode the energy window used to close after the records were built and
    journaled; slow record handling (here 0.2 s a request) then read as energy per token."""
    from rigbook.bench.measure import MeasureRequest
    from rigbook.bench.plan import resolve_plan
    from rigbook.bench.runner import run_bench
    from rigbook.bench.telemetry import Sampler

    def slow(event: str, data: dict) -> None:
        if event == "request":
            time.sleep(0.2)

    plan = resolve_plan(
        MeasureRequest(
            url=url,
            model="synthetic",
            concurrency=[4],
            duration_s=1.0,
            max_tokens=400,
            warmup=0,
            out=tmp_path / "r.json",
        )
    )
    result = asyncio.run(
        run_bench(
            plan, rig=None, rig_unavailable="test", progress=slow, sampler=Sampler(_OneWattReader())
        )
    )
    cell = result.cells[0]
    assert len(cell.requests) >= 4
    # 1 W over a 1 s window is 1 J; 4 slow records would have added 0.8 J.
    assert 0.95 < cell.telemetry.energy_j_total < 1.25, cell.telemetry.energy_j_total


@pytest.mark.parametrize("during", ["warmup", "cell"])
def test_a_stopped_run_returns_cut_short_within_seconds(slow_url, tmp_path, during):
    """The library's side of a signal: setting the stop event ends the run within seconds, in the
    warmup as in a cell, and the measurement says it was cut short (the CLI then exits 128 + the
    signal, tests/bench/test_cli.py). A warmup request in flight used to run to its end (100 s
    here) before the stop was looked at."""
    import threading

    out, warmup = tmp_path / "r.json", 1 if during == "warmup" else 0
    stop = threading.Event()
    timer = threading.Timer(1.5, stop.set)
    timer.start()
    t0 = time.monotonic()
    try:
        done = measure_bench(
            slow_url, out, stop=stop, concurrency=[2], requests=2, max_tokens=200, warmup=warmup
        )
    finally:
        timer.cancel()
    elapsed = time.monotonic() - t0
    assert elapsed < 10, elapsed
    assert done.cut_short and done.result.conditions.cut_short
    assert done.verdict is None and done.result.perf_points == []
    assert any(w.code == "W_CUT_SHORT" for w in done.result.warnings)
    assert load_result(done.result_path).conditions.cut_short


def test_a_warmup_that_failed_in_several_ways_is_named_by_its_last_failure(tmp_path):
    """A server still starting refuses the first warmup, then answers 503: that is an HTTP error
    (E_HTTP), not a stream the engine broke after a 200 (E_ENGINE_ERROR, which a mix of
    connect and HTTP failures used to be called)."""
    from rigbook.bench.measure import verdict_of

    result = load_result(_failed_warmup_result(tmp_path, ["connect: refused", "http_503: loading"]))
    assert verdict_of(result, tmp_path / "r.json").code == "E_HTTP"
    result = load_result(
        _failed_warmup_result(tmp_path, ["http_503: loading", "dropped: stream ended"])
    )
    assert verdict_of(result, tmp_path / "r.json").code == "E_ENGINE_ERROR"
    result = load_result(_failed_warmup_result(tmp_path, ["connect: refused"] * 2))
    assert verdict_of(result, tmp_path / "r.json").code == "E_CONNECT"


def _failed_warmup_result(tmp_path, errors: list[str]):
    from rigbook.bench.assemble import assemble
    from rigbook.bench.result import Conditions, ProfileRef, RunTelemetry, save_result

    warmup = []
    for i, error in enumerate(errors):
        raw = RawRequest(sent=0.0)
        raw.error, raw.done = error, 0.01
        rec = to_record(
            raw, cell=-1, index=i, prompt_index=0, t0=0.0, max_tokens=5, hold_length=True
        )
        warmup.append(rec.model_copy(update={"warmup": True}))
    cond = Conditions(
        url="http://127.0.0.1:1",
        model="m",
        profile=ProfileRef(
            name="seed",
            version=2,
            content_hash="0",
            max_tokens=5,
            temperature=0.0,
            top_p=1.0,
            thinking=False,
            reply_length_held=True,
            workload="prose",
        ),
        mode="burst",
        rigbook_version="test",
        started_at="2026-12-04T00:00:00+00:00",
    )
    result = assemble(
        cond, [], RunTelemetry(available=False), warnings=[], journal=None, warmup=warmup
    )
    return save_result(result, tmp_path / "r.json")


def test_a_request_the_client_lost_makes_the_cell_invalid(url, tmp_path, monkeypatch):
    """A lane that dies (here on a bug at its second request) leaves no failed request behind;
    the cell must still not look whole with fewer requests than it planned."""
    from rigbook.bench.runner import CellPlan

    real = CellPlan.sender

    def sender(self, reads=None):
        send = real(self, reads)

        async def broken(i, raw):
            if i == 1:
                raise RuntimeError("a bug in the client")
            await send(i, raw)

        return broken

    monkeypatch.setattr(CellPlan, "sender", sender)
    done = measure_bench(url, tmp_path / "r.json", concurrency=[1], requests=3, max_tokens=8)
    cell = done.result.cells[0]
    assert [r.index for r in cell.requests] == [0]
    assert not cell.valid and "2 of 3 planned requests never ran" in cell.invalid_reasons[0]
    assert done.verdict is not None and done.verdict.code == "E_BENCH_INVALID"
    assert done.result.perf_points == []
