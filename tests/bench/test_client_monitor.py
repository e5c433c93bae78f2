"""ClientMonitor and W_CLIENT_BOUND both ways: a planted stall is caught, a clean run is not."""

from __future__ import annotations

import time

import pytest

from rigbook.bench.measure import MeasureRequest, measure
from tests.bench.helpers import start_synthetic


@pytest.fixture(scope="module")
def url():
    # 20 tok/s, one token an event: 50 ms between a stream's events, so the stall limit is 25 ms,
    # far above what a busy two-core machine's scheduler costs and far below the planted stall.
    proc, base = start_synthetic("--rate", "20", "--tokens-per-chunk", "1", "--falloff", "0")
    yield base
    proc.terminate()
    proc.wait(10)


def _run(url, tmp_path, progress=None):
    request = MeasureRequest(
        url=url,
        model="synthetic",
        concurrency=[4],
        requests=8,
        max_tokens=30,
        warmup=0,
        out=tmp_path / "r.json",
        telemetry=False,
    )
    return measure(request, progress=progress).result


def test_a_planted_stall_is_caught(url, tmp_path):
    """The first request to finish blocks the loop for 300 ms while three streams are open."""
    stalled = []

    def stall(event: str, data: dict) -> None:
        if event == "request" and not stalled:
            stalled.append(True)
            time.sleep(0.3)

    result = _run(url, tmp_path, stall)
    cell = result.cells[0]
    assert cell.client_bound and cell.client.loop_lag_worst_ms >= 250
    assert cell.client.worst_stall_cpu_ms < 50  # time.sleep blocks the loop without using a CPU
    assert "stalled" in cell.client.reason and cell.client.stall_limit_ms == pytest.approx(
        25, rel=0.1
    )
    assert result.perf_points == []
    assert any(w.startswith("W_CLIENT_BOUND: cell 0") for w in result.warnings)


def test_a_clean_run_is_not_flagged(url, tmp_path):
    result = _run(url, tmp_path)
    cell = result.cells[0]
    if cell.client_bound and cell.client.worst_stall_cpu_ms < 0.2 * cell.client.loop_lag_worst_ms:
        # Flagged rightly: the (shared) machine left the client unscheduled longer than the limit.
        assert "did not schedule it" in cell.client.reason
        pytest.skip(f"the machine descheduled the client: {cell.client.reason}")
    assert cell.valid and not cell.client_bound, cell.client.reason
    assert cell.client.loop_lag_worst_ms < cell.client.stall_limit_ms
    assert [p.concurrency for p in result.perf_points] == [4]
    assert not any(w.startswith("W_CLIENT_BOUND") for w in result.warnings)
