"""`rigbook report` on a capacity result: the curve with every probe, the SLO lines and the knee."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.collections import PathCollection

from rigbook.capacity.chart import capacity_figure, write_capacity_report
from rigbook.capacity.result import load_capacity

BENCHMARKS = Path(__file__).resolve().parents[1] / "fixtures" / "capacity"
LLAMA = BENCHMARKS / "llama-server" / "per-user-5-ttft-p90-5s" / "capacity.json"
NO_USER = BENCHMARKS / "vllm-cpu" / "at-1-tok-s" / "capacity.json"


def _lines(fig, horizontal: bool) -> set[tuple[float, str]]:
    """(position, style) of every straight axis-spanning line in the figure."""
    found = set()
    for ax in fig.axes:
        for line in ax.get_lines():
            xs, ys = line.get_xdata(), line.get_ydata()
            data = ys if horizontal else xs
            if len(data) == 2 and data[0] == data[1]:
                found.add((float(data[0]), line.get_linestyle()))
    return found


def _points(fig) -> list[tuple[float, float]]:
    return [
        (float(x), float(y))
        for ax in fig.axes
        for c in ax.collections
        if isinstance(c, PathCollection)
        for x, y in c.get_offsets()
    ]


@pytest.fixture
def llama():
    return load_capacity(LLAMA)


def test_the_curve_has_every_probe_the_slo_lines_and_the_knee(llama):
    fig = capacity_figure(llama)
    try:
        # One dashed line per speed or latency term, at its threshold: 5 tok/s and 5000 ms.
        assert {y for y, style in _lines(fig, horizontal=True) if style == "--"} == {5.0, 5000.0}
        # The knee (8 users, solid) and the first failing level (9, dotted), on both panels.
        verticals = _lines(fig, horizontal=False)
        assert llama.answer.users == 8 and llama.answer.first_fail_concurrency == 9
        assert {(8.0, "-"), (9.0, ":")} <= verticals
        assert "8 users" in [t.get_text() for t in fig.axes[0].texts]
        # Every probe's reading of each drawn term, and its aggregate, re-runs included.
        points = _points(fig)
        for probe in llama.probes:
            for r in probe.readings:
                if r.term != "error_rate" and r.value is not None:
                    assert (float(probe.concurrency), r.value) in points
            assert (float(probe.concurrency), probe.aggregate_tok_s) in points
        assert len([p for p in llama.probes if p.concurrency == 8]) == 3
        # Failed readings are drawn apart (x markers, labelled so).
        labels = [h.get_text() for h in fig.axes[0].get_legend().get_texts()]
        assert "TTFT p90 (failed)" in labels and "SLO TTFT p90 ≤ 5 s" in labels
    finally:
        plt.close(fig)


def test_no_user_says_so_on_the_chart():
    result = load_capacity(NO_USER)
    assert result.answer.users == 0
    fig = capacity_figure(result)
    try:
        assert fig.get_suptitle().endswith("\nno user met the SLO")
        assert (1.0, ":") in _lines(fig, horizontal=False)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_report_page_embeds_the_chart_and_the_sentence(llama, tmp_path, fmt):
    written = write_capacity_report(llama, tmp_path, fmt)
    chart = tmp_path / "capacity.png"
    assert chart in written.plots and chart.stat().st_size > 10_000
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = written.report.read_text(encoding="utf-8")
    assert "capacity.png" in page
    assert llama.answer.sentence in page
    # The probes' own bench report beside it.
    assert (tmp_path / "bench").is_dir()
