"""A sustained cell journals each request as it ends, so a SIGKILL mid-window loses nothing
finished; in one process and with worker processes, which number requests only at the end."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from rigbook.bench.journal import rebuild
from rigbook.bench.result import load_result
from tests.bench.helpers import start_bench, synthetic_server


@pytest.fixture(scope="module")
def url():
    with synthetic_server("--rate 400 --tokens-per-chunk 2") as base:
        yield base


def _sustained(url: str, out: Path, duration: str, workers: str):
    options = (
        f"--concurrency 2 --duration {duration} --max-tokens 20 --warmup 0 --workers {workers}"
    )
    return start_bench(url, out, options + " --json")


def _lines(journal: Path, kind: str) -> list[dict]:
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    return [row for row in rows if row["type"] == kind]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_sigkill_mid_window_keeps_the_streams_that_ended(url, tmp_path, workers):
    out = tmp_path / "r.json"
    journal = out.with_name("r.journal.jsonl")
    proc = _sustained(url, out, "60", workers)
    deadline = time.monotonic() + 60
    while not (journal.exists() and '"cell_start"' in journal.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.1)
    # 20-token replies at 400 tok/s end every ~50 ms on each of the two streams
    time.sleep(2.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    cell = rebuild(journal).cells[0]
    assert cell.mode == "sustained" and cell.cut_short and not cell.valid
    assert cell.metrics.requests_ok >= 4 and all(r.ok for r in cell.requests)
    assert len({r.index for r in cell.requests}) == len(cell.requests)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_finished_sustained_cell_journals_each_request_twice(url, tmp_path, workers):
    out = tmp_path / "r.json"
    proc = _sustained(url, out, "1", workers)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    cell = load_result(out).cells[0]
    journal = out.with_name("r.journal.jsonl")
    ended, final = _lines(journal, "stream_ended"), _lines(journal, "request")
    assert len(ended) == len(final) == len(cell.requests) >= 4
    assert [r.index for r in cell.requests] == list(range(len(cell.requests)))
    if workers == "2":  # the workers' own numbers became ranks in the order sent
        sent = [r.sent_s for r in cell.requests]
        assert sent == sorted(sent)
    # The window cuts the streams still running at its end; their `stream_ended` line did not
    # know the window yet, their `request` line does.
    assert sum(r.cut_at_window for r in cell.requests) >= 1
    # A journal whose cell ended is rebuilt from the final lines, not the provisional ones.
    assert rebuild(journal).cells[0].requests == cell.requests
