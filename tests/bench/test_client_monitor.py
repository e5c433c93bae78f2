"""The Python client's ClientMonitor and W_CLIENT_BOUND both ways: a planted stall is caught, a
clean run is not. (The compiled client's watch: tests/bench/test_compiled_client.py.)"""

from __future__ import annotations

import asyncio
import time

import pytest

from rigbook.bench.scheduler import judge_client
from tests.bench.helpers import bench, streamed, synthetic_server


@pytest.fixture(scope="module")
def url():
    # 20 tok/s, one token an event: 50 ms between a stream's events, so the stall limit is 25 ms,
    # far above what a busy two-core machine's scheduler costs and far below the planted stall.
    with synthetic_server("--rate 20 --tokens-per-chunk 1 --falloff 0") as base:
        yield base


def _run(url, tmp_path, progress=None):
    return bench(
        url,
        tmp_path / "r.json",
        progress=progress,
        concurrency=[4],
        requests=8,
        max_tokens=30,
        client="python",
    )


def test_a_planted_stall_is_caught(url, tmp_path):
    """A 300 ms block of the loop while the second wave streams."""
    stalled = []

    def stall(event: str, data: dict) -> None:
        # Not at the first request's end: the first wave's streams may all have ended in one
        # read, and the next wave not yet connected, so no stream is open and the stall rightly
        # distorts nothing (a loaded machine does this). 0.7 s later the second wave streams.
        if event == "request" and not stalled:
            stalled.append(True)
            asyncio.get_running_loop().call_later(0.7, time.sleep, 0.3)

    result = _run(url, tmp_path, stall)
    cell = result.cells[0]
    assert cell.client_bound and cell.client.loop_lag_worst_ms >= 250
    assert cell.client.worst_stall_cpu_ms < 50  # time.sleep blocks the loop without using a CPU
    # The limit is half the records' median gap between events (25 ms at 20 tok/s on an idle
    # machine): what the rule gives for these records, not a wall-clock figure.
    assert "stalled" in cell.client.reason
    assert cell.client.stall_limit_ms == judge_client(cell.client, cell.requests).stall_limit_ms
    assert result.perf_points == []
    assert any(w.line.startswith("W_CLIENT_BOUND: cell 0") for w in result.warnings)


def test_a_planted_stall_just_over_the_limit_is_caught(url, tmp_path):
    """30 ms: 2 % of a 1.5 s reply's rate. The ticker's bound on the longest stall holds it
    wherever the stall falls between its wakes."""
    stalled = []

    def stall(event: str, data: dict) -> None:
        # The first wave's streams end together, and the next wave's first tokens may not have
        # come yet: a stall there delays no read. Planted 0.7 s later, it falls mid-stream in the
        # second wave (30 tokens at 20 tok/s: 1.5 s of streaming).
        if event == "request" and not stalled:
            stalled.append(True)
            asyncio.get_running_loop().call_later(0.7, time.sleep, 0.03)

    result = _run(url, tmp_path, stall)
    cell = result.cells[0]
    assert cell.client_bound, cell.client
    assert cell.client.stall_worst_bound_ms >= 30
    assert result.perf_points == []
    assert any(w.line.startswith("W_CLIENT_BOUND: cell 0") for w in result.warnings)


def test_a_clean_run_is_not_flagged(url, tmp_path):
    result = _run(url, tmp_path)
    cell = result.cells[0]
    if cell.client_bound and cell.client.worst_stall_cpu_ms < 0.2 * cell.client.loop_lag_worst_ms:
        # Flagged rightly: the (shared) machine left the client unscheduled longer than the limit.
        assert "did not schedule it" in cell.client.reason
        pytest.skip(f"the machine descheduled the client: {cell.client.reason}")
    assert cell.valid and not cell.client_bound, cell.client.reason
    # The rates hold; a few ms of stall may still mark a TTFT of a few ms, or the per-token gaps.
    assert not {"aggregate_tok_s", "per_request_decode_tok_s"} & set(cell.client.marked)
    assert [p.concurrency for p in result.perf_points] == [4]
    assert not any("_tok_s by" in w.message for w in result.warnings)


# The stall rule itself, without a server: a ClientMonitor on this loop, a ReadWatch with one
# stream open, and records whose events are 50 ms apart (so the limit is 25 ms).


def _records(gap_s: float = 0.05, tokens: int = 20):
    from rigbook.bench.metrics import to_record

    raw = streamed(tokens, gap_s=gap_s)
    return [
        to_record(raw, cell=0, index=0, prompt_index=0, t0=0.0, max_tokens=tokens, hold_length=True)
    ]


def _watch(stall_s: float, *, after_s: float = 0.1):
    """Run a ClientMonitor with a stream open and block the loop for ``stall_s`` as soon as the
    monitor has set its first tick: the worst place for a ticker, since the stall then starts a
    whole tick before the tick is due and the tick wakes only the stall less a tick late."""
    import asyncio

    from rigbook.bench.client import ReadWatch
    from rigbook.bench.scheduler import ClientMonitor

    async def run():
        reads = ReadWatch()
        reads.opened()
        monitor = ClientMonitor(reads)
        monitor.start()
        await asyncio.sleep(0)  # the monitor sets its first tick
        if stall_s:
            time.sleep(stall_s)
        await asyncio.sleep(after_s)
        reads.closed()
        return await monitor.stop()

    return asyncio.run(run())


def test_a_stall_just_over_the_limit_is_caught_even_right_after_a_tick():
    """A 28 ms stall (3 % of a 1 s reply's rate) starting as a tick has just gone by: a 5 ms
    ticker sees it only 23 ms late. The watch's bound on the longest stall still holds it."""

    load = judge_client(_watch(0.028), _records())
    assert load.stall_limit_ms == pytest.approx(25, rel=0.01)
    assert load.client_bound, load
    assert "stall" in load.reason
    assert load.stall_worst_bound_ms >= 28.0


def test_a_busy_client_that_never_stalls_is_not_client_bound():
    """Using most of a core is no distortion by itself: only a stall that could move a rate is
    (1 % of a 10 s reply: 100 ms)."""

    load = _watch(0.0, after_s=0.3).model_copy(update={"cpu_fraction": 0.97})
    if load.loop_lag_worst_ms > 50.0:
        pytest.skip(f"the machine left this process unscheduled: {load}")
    judged = judge_client(load, _records(tokens=200))
    assert not judged.client_bound, judged.reason


def test_records_built_as_streams_end_together_do_not_stall_the_others(tmp_path, monkeypatch):
    """32 streams of one length end within a few ms of each other. Each finished request's record
    is built on the loop (here made to cost 2 ms, as on a crowded machine); built as each stream
    ended, they ran back to back in one loop iteration while the last streams still had tokens
    to read: a client stall of tens of ms, rightly flagged, of the client's own making. Built in
    slices of about 1 ms with reads between them, they stall nothing."""
    from rigbook.bench.runner import CellPlan

    record = CellPlan.record

    def slow_record(self, *args, **kw):
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass
        return record(self, *args, **kw)

    monkeypatch.setattr(CellPlan, "record", slow_record)
    with synthetic_server("--rate 40 --tokens-per-chunk 1 --falloff 0") as base:
        result = bench(
            base,
            tmp_path / "r.json",
            concurrency=[32],
            requests=32,
            max_tokens=60,
            warmup=1,
            client="python",
        )
    cell = result.cells[0]
    assert len(cell.requests) == 32 and cell.valid
    load = cell.client
    if load.client_bound and load.worst_stall_cpu_ms < 0.2 * load.loop_lag_worst_ms:
        pytest.skip(f"the machine descheduled the client: {load.reason}")
    assert not cell.client_bound, load.reason


def test_building_the_first_record_imports_nothing():
    """A module imported on the first record built would stall the streams of the first cell
    still reading (numpy's percentile imported numpy.ma on its first call: 14-25 ms here, past
    the 12.5 ms limit of a 40 tok/s stream, so a run without warmup flagged its first cell)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from rigbook.bench.runner import run_bench\n"
        "from tests.bench.test_client_monitor import _records\n"
        "before = set(sys.modules)\n"
        "_records()\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout
