"""`rigbook bench --ci-target`: each level repeated as whole waves until its interval is narrow enough,
or a cap ends it; the interval is reported either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.helpers import bench_args, measure_bench, rigbook, synthetic_server

SERVER = "--rate 50 --falloff 0 --tokens-per-chunk 1"


@pytest.fixture(scope="module")
def url():
    with synthetic_server(SERVER) as base:
        yield base


def test_an_unreachable_target_stops_at_the_repeat_cap(url: str, tmp_path: Path) -> None:
    done = measure_bench(
        url,
        tmp_path / "r.json",
        profile="quick",
        concurrency=[1, 2],
        max_tokens=8,
        requests=2,
        ci_target_pct=0.0001,
        max_repeats=3,
    )
    result = done.result
    assert [(lv.concurrency, lv.repeats, lv.stopped_by, lv.met) for lv in result.intervals] == [
        (1, 3, "repeats", False),
        (2, 3, "repeats", False),
    ]
    assert [(c.concurrency, c.repeat) for c in result.cells] == [
        (1, 0),
        (1, 1),
        (1, 2),
        (2, 0),
        (2, 1),
        (2, 2),
    ]
    assert [c.index for c in result.cells] == list(range(6))
    # One perf point a level, its rates the means over the repeats that count.
    assert [p.concurrency for p in result.perf_points] == [1, 2]
    for point, level in zip(result.perf_points, result.intervals, strict=True):
        if level.aggregate_tok_s is not None:
            assert point.decode_tok_s == pytest.approx(level.aggregate_tok_s.mean)
            assert "repeated waves" in (point.notes or "")


def test_the_time_cap_ends_a_level_after_the_repeat_that_passed_it(
    url: str, tmp_path: Path
) -> None:
    result = measure_bench(
        url,
        tmp_path / "r.json",
        profile="quick",
        concurrency=[1],
        max_tokens=8,
        requests=1,
        ci_target_pct=0.0001,
        max_level_s=0.01,
    ).result
    [level] = result.intervals
    assert (level.repeats, level.stopped_by) == (1, "time")
    assert (
        level.aggregate_tok_s is None or level.aggregate_tok_s.low is None
    )  # one repeat: no interval


def test_without_the_option_each_level_runs_once(url: str, tmp_path: Path) -> None:
    result = measure_bench(
        url, tmp_path / "r.json", profile="quick", concurrency=[1, 2], max_tokens=8, requests=2
    ).result
    assert result.intervals == [] and [c.repeat for c in result.cells] == [None, None]


def test_the_command_prints_and_writes_the_intervals(url: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = bench_args(
        url, out, "--profile quick --concurrency 1 --max-tokens 8 --requests 2 --max-repeats 3"
    )
    done = rigbook(*args, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    [level] = summary["intervals"]
    assert level["target_pct"] == 2.0 and level["repeats"] <= 3
    assert json.loads(out.read_text())["intervals"] == summary["intervals"]
    shown = rigbook(*args)
    assert shown.returncode == 0 and "interval: concurrency 1: aggregate" in shown.stderr
    assert rigbook(*args, "--max-repeats", "2").returncode == 2  # at least 3
