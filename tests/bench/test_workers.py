"""A cell's streams in two worker processes (`rigbook bench --workers 2`), against the synthetic
server on loopback: every request once, every token the server sent, signals and a killed worker."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from rigbook.bench.journal import journal_path
from rigbook.bench.progress import ceiling_line
from rigbook.bench.result import BenchResult, load_result
from rigbook.bench.worker_protocol import check_clock
from rigbook.bench.workers import STREAMS_PER_WORKER, ceiling, cell_workers, split
from rigbook.errors import InternalError
from tests.bench.helpers import (
    bench,
    follows_from_records,
    recorded,
    signalled,
    start_bench,
    synthetic_server,
)
from tests.in_process import rigbook_here as rigbook

RATE = 200.0  # tok/s per request, one token per event, no slow-down with concurrency


@pytest.fixture(scope="module")
def server_url():
    with synthetic_server(f"--rate {RATE} --tokens-per-chunk 1 --falloff 0 --ttft-s 0.02") as url:
        yield url


@pytest.fixture
def url(server_url):
    httpx.post(server_url + "/_reset")
    return server_url


def journaled(out: Path) -> list[dict]:
    lines = [json.loads(x) for x in journal_path(out).read_text().splitlines()]
    return [x["record"] for x in lines if x["type"] == "request"]


def check_counts(result: BenchResult, own: list[dict]) -> None:
    """Each completed request carried the tokens the server sent it (the n-th sent is the n-th to
    arrive), and the cell's figures follow from its records."""
    cell = result.cells[0]
    done = [r for r in sorted(cell.requests, key=lambda r: r.sent_s) if not r.cut_at_window]
    truth = {s["arrival"]: s for s in own if s["completed"]}
    assert len(truth) == len(done)
    for rec, srv in zip(done, (truth[a] for a in sorted(truth)), strict=True):
        assert rec.output_tokens == srv["tokens"] and rec.chunks == srv["chunks"]
    follows_from_records(cell)


def test_the_default_is_one_process_until_one_could_be_the_limit():
    assert cell_workers(1, None, cpus=8) == 1
    assert cell_workers(STREAMS_PER_WORKER, None, cpus=8) == 1
    assert cell_workers(STREAMS_PER_WORKER + 1, None, cpus=8) == 2
    assert cell_workers(4096, None, cpus=8) == 8 and cell_workers(4096, None, cpus=2) == 2
    # Asked for: that many, never more than there are streams.
    assert cell_workers(64, 3, cpus=1) == 3 and cell_workers(2, 4, cpus=8) == 2
    assert split(5, 2) == [3, 2] and split(4, 3) == [2, 1, 1]


def test_a_perf_counter_that_is_not_clock_monotonic_fails_loudly(monkeypatch):
    assert check_clock() <= time.clock_gettime(time.CLOCK_MONOTONIC)  # Linux: one clock
    real = time.clock_gettime
    monkeypatch.setattr(time, "clock_gettime", lambda clock: real(clock) + 3600.0)
    with pytest.raises(InternalError, match="is not CLOCK_MONOTONIC"):
        check_clock()


def test_the_ceiling_is_the_cheapest_cells_and_n_times_it_with_workers():
    published = Path(__file__).parents[1] / "fixtures/results/cpu-llama-server/result.json"
    result = load_result(published)  # written before workers: one process
    assert ceiling_line(ceiling(result.cells)) == (
        "client ceiling: one process 2,162 tok/s (10⁶ ÷ 462.5 µs CPU per token at concurrency 4)"
    )
    cell = result.cells[1]
    assert cell.client is not None
    split_cell = cell.model_copy(update={"client": cell.client.model_copy(update={"workers": 3})})
    two = result.model_copy(update={"cells": [result.cells[0], split_cell]})
    assert ceiling_line(ceiling(two.cells)) == (
        "client ceiling: one process 2,162 tok/s (10⁶ ÷ 462.5 µs CPU per token at concurrency 4); "
        "3 worker processes 6,486 tok/s"
    )


def test_a_burst_cell_in_two_workers_counts_what_the_server_sent(url, tmp_path):
    out = tmp_path / "r.json"
    result = bench(url, out, concurrency=[4], requests=9, max_tokens=100, workers=2)
    cell = result.cells[0]
    assert cell.valid, cell.invalid_reasons
    # Every index exactly once, in order; the journal holds every one.
    assert [r.index for r in cell.requests] == list(range(9))
    assert sorted(r["index"] for r in journaled(out)) == list(range(9))
    own = recorded(url)
    assert len(own) == 9
    check_counts(result, own)
    client = cell.client
    assert client is not None and client.workers == 2
    # Lanes 0 and 2 are worker 0's, 1 and 3 worker 1's: 5 and 4 of the 9 requests.
    assert [(w.streams, w.requests, w.tokens) for w in client.per_worker] == [
        (2, 5, 500),
        (2, 4, 400),
    ]
    assert all(w.cpu_us_per_token and w.pid for w in client.per_worker)
    assert client.cpu_s == pytest.approx(sum(w.cpu_s or 0 for w in client.per_worker))
    assert client.parent_cpu_s is not None and client.parent_cpu_s > 0


def test_one_worker_keeps_every_stream_in_this_process(url, tmp_path):
    result = bench(url, tmp_path / "r.json", concurrency=[4], requests=4, max_tokens=50, workers=1)
    cell = result.cells[0]
    assert cell.valid and cell.client is not None
    # As before workers existed: a cell the pool ran would name its workers.
    assert cell.client.workers is None and cell.client.per_worker == []
    assert cell.client.parent_cpu_s is None


def test_a_sustained_cell_in_two_workers_counts_what_the_server_sent(url, tmp_path):
    out = tmp_path / "r.json"
    result = bench(url, out, concurrency=[4], duration_s=2.5, max_tokens=100, workers=2)
    cell = result.cells[0]
    assert cell.mode == "sustained" and cell.valid, cell.invalid_reasons
    # Numbered in the order sent, each once; every one journaled.
    assert [r.index for r in cell.requests] == list(range(len(cell.requests)))
    assert sorted(r.sent_s for r in cell.requests) == [r.sent_s for r in cell.requests]
    assert sorted(r["index"] for r in journaled(out)) == list(range(len(cell.requests)))
    assert any(r.cut_at_window for r in cell.requests)
    own = recorded(url)
    check_counts(result, own)
    # The window counts no token the server did not send, and no request before the window.
    assert min(r.sent_s for r in cell.requests) >= 0
    assert cell.metrics.tokens_in_window <= sum(s["tokens"] for s in own)
    assert cell.client is not None and cell.client.workers == 2


def _bench_cli(url: str, out: Path, mode: str = "--requests 4") -> subprocess.Popen:
    """Two workers, two streams each, 8-token replies (4 s each from ``slow_url``); ``mode`` is
    --requests N or --duration S."""
    httpx.post(url + "/_reset")
    return start_bench(
        url, out, f"--concurrency 4 --max-tokens 8 {mode} --warmup 0 --workers 2 --json"
    )


def _is_worker(p: psutil.Process) -> bool:
    try:
        return "rigbook.bench.worker import" in " ".join(p.cmdline())
    except psutil.Error:  # the rig probe's short-lived tools come and go
        return False


def _streaming(proc: subprocess.Popen, url: str, out: Path) -> list[psutil.Process]:
    """Wait until the cell has started and the server is sending tokens on all four of its
    streams (so in both workers); returns the workers."""
    deadline = time.monotonic() + 60
    journal = journal_path(out)
    while time.monotonic() < deadline:
        workers = [p for p in psutil.Process(proc.pid).children() if _is_worker(p)]
        if len(workers) == 2 and journal.exists() and "cell_start" in journal.read_text():
            own = recorded(url)
            if len(own) == 4 and all(s["tokens"] for s in own):
                return workers
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the cell did not start")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_two_worker_cell_within_seconds(slow_url, tmp_path, sig):
    out = tmp_path / "r.json"
    proc = _bench_cli(slow_url, out)
    workers = _streaming(proc, slow_url, out)
    took, stdout, err = signalled(proc, sig)
    assert proc.returncode == 128 + sig, err[-2000:]
    assert took < 5, took
    assert json.loads(stdout)["cut_short"] is True
    result = load_result(out)
    cell = result.cells[0]
    assert result.conditions.cut_short and cell.cut_short
    assert cell.client is not None and cell.client.workers == 2
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)


def test_a_killed_worker_fails_its_requests_and_the_run_still_ends(slow_url, tmp_path):
    out = tmp_path / "r.json"
    proc = _bench_cli(slow_url, out)
    victim = _streaming(proc, slow_url, out)[1]
    victim.send_signal(signal.SIGKILL)
    stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err[-2000:]
    summary = json.loads(stdout)
    assert summary["error"]["code"] == "E_BENCH_INVALID"
    assert summary["client_ceiling"]["workers"] == 2
    cell = load_result(out).cells[0]
    failed = [r for r in cell.requests if not r.ok]
    # Lanes 1 and 3 were the killed worker's: their two requests fail with the reason; the
    # other worker's two complete.
    assert [r.index for r in failed] == [1, 3]
    assert all(
        r.error == f"client_worker: worker 1: pid {victim.pid} killed by SIGKILL" for r in failed
    )
    assert [r.index for r in cell.requests if r.ok] == [0, 2]
    assert sorted(r["index"] for r in journaled(out)) == [0, 1, 2, 3]
    assert cell.client is not None and cell.client.per_worker[1].died


def test_a_killed_worker_in_a_sustained_cell_fails_its_streams(slow_url, tmp_path):
    out = tmp_path / "r.json"
    proc = _bench_cli(slow_url, out, "--duration 3")
    victim = _streaming(proc, slow_url, out)[1]
    victim.send_signal(signal.SIGKILL)
    _stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err[-2000:]
    cell = load_result(out).cells[0]
    assert cell.mode == "sustained" and [r.index for r in cell.requests] == [0, 1, 2, 3]
    # The killed worker's two streams fail; the other's two run to the window's end and are cut.
    failed = [r for r in cell.requests if not r.ok]
    assert len(failed) == 2
    assert all(
        r.error == f"client_worker: worker 1: pid {victim.pid} killed by SIGKILL" for r in failed
    )
    assert sum(r.cut_at_window for r in cell.requests) == 2


@pytest.mark.parametrize("n", ["0", "-1"])
def test_workers_below_one_is_an_input_error(tmp_path, monkeypatch, n):
    monkeypatch.chdir(tmp_path)
    p = rigbook("bench", "http://127.0.0.1:9", "--workers", n, "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "E_INPUT", p.stdout


def test_replies_larger_than_the_socket_buffer_all_come_back(tmp_path):
    """Sixteen 2,000-event replies ending together are over half a megabyte of arrival times: more
    than the socket between a worker and the parent holds, so a worker must queue, not drop."""
    out = tmp_path / "r.json"
    with synthetic_server("--rate 2000 --tokens-per-chunk 1 --falloff 0") as url:
        result = bench(url, out, concurrency=[16], requests=16, max_tokens=2000, workers=2)
        own = recorded(url)
    cell = result.cells[0]
    assert cell.valid, cell.invalid_reasons
    assert [r.index for r in cell.requests] == list(range(16))
    assert sorted(r["index"] for r in journaled(out)) == list(range(16))
    assert sum(r.output_tokens for r in cell.requests) == sum(s["tokens"] for s in own) == 32000
