"""The bench at scale: thousands of streams stop on a signal; memory per stream stays bounded."""

from __future__ import annotations

import json
import signal
import time
import tracemalloc
from array import array

import pytest

from rigbook.bench.metrics import to_record
from rigbook.bench.result import load_result
from rigbook.openai.stream import RawRequest, apply_event
from tests.bench.helpers import signalled, start_bench


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_4000_stream_cell_stops_on_a_signal_within_seconds(slow_url, tmp_path, sig):
    out = tmp_path / "r.json"
    # At 2 tok/s (slow_url), a 4,000-stream cell of 2,000-token replies would run for 1,000 s.
    proc = start_bench(slow_url, out, "--concurrency 4000 --max-tokens 2000 --warmup 0 --json")
    journal = out.with_name("r.journal.jsonl")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        journal.exists() and "cell_start" in journal.read_text()
    ):
        time.sleep(0.2)
    time.sleep(3.0)  # thousands of streams open and reading
    took, stdout, err = signalled(proc, sig)
    assert proc.returncode == 128 + sig, err[-2000:]
    assert took < 15, took
    summary = json.loads(stdout)
    assert summary["cut_short"] is True
    result = load_result(out)
    assert (
        result.conditions.cut_short
        and result.cells[0].cut_short
        and result.cells[0].concurrency == 4000
    )


def test_4096_streams_of_2000_tokens_stay_well_under_a_gigabyte():
    """What a cell holds per stream: three arrays while streaming, then one record."""
    times = array("d", (0.05 + k * 0.01 for k in range(2000)))
    usage = array("q", range(1, 2001))
    tracemalloc.start()
    raws = []
    for _ in range(4096):
        raw = RawRequest(sent=0.0)
        # The first event through the parser, the rest straight into the arrays it fills.
        apply_event(
            raw,
            {
                "choices": [{"delta": {"content": "tok "}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1},
            },
            times[0],
        )
        raw.times.extend(times[1:])
        raw.usage.extend(usage[1:])
        raw.reasoning.extend(bytes(1999))
        raw.finish_reason, raw.done = "length", 20.1
        raws.append(raw)
    streaming_peak = tracemalloc.get_traced_memory()[1]
    records = [
        to_record(r, cell=0, index=i, prompt_index=0, t0=0.0, max_tokens=2000, hold_length=True)
        for i, r in enumerate(raws)
    ]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert all(r.ok and r.output_tokens == 2000 for r in records)
    assert streaming_peak < 200 * 2**20, streaming_peak
    assert peak < 300 * 2**20, peak
