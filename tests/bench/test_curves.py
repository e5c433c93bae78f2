"""The throughput and TTFT charts: the points they are drawn from, the cells they leave out, and the
report pages that embed them. Real committed results, and copies of them changed one fact at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbook.bench.curves import curves, gpu_count, left_out_note
from rigbook.bench.report import write_report
from rigbook.bench.result import BenchResult, load_result

RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "results"


def real(name: str) -> BenchResult:
    # Hashes are not the subject here; some committed files predate fields the model gained since.
    return load_result(RESULTS / name / "result.json", check_hash=False)


def test_h200_points_are_each_cells_median_rate_and_aggregate_per_gpu():
    result = real("h200")
    drawn = curves(result)
    assert drawn.gpu_count == 1 and drawn.unit == "per GPU" and drawn.scale_note() is None
    assert [p.label for p in drawn.throughput] == ["C=1", "C=4", "C=8"]
    by_c = {c.concurrency: c.metrics for c in result.cells}
    for p in drawn.throughput:
        assert p.per_user_tok_s == by_c[p.concurrency].per_request_decode_tok_s.p50
        assert p.throughput_tok_s == by_c[p.concurrency].aggregate_tok_s
    assert [(t.p50_ms, t.p99_ms) for t in drawn.ttft] == [
        (by_c[c].ttft_ms.p50, by_c[c].ttft_ms.p99) for c in (1, 4, 8)
    ]
    assert drawn.throughput_left_out == drawn.ttft_left_out == []


def test_two_gpus_halve_the_throughput_axis_not_the_per_user_one():
    result = real("h200")
    rig = result.conditions.rig
    assert rig is not None
    two = rig.model_copy(update={"gpus": [*rig.gpus, rig.gpus[0].model_copy(update={"index": 1})]})
    doubled = result.model_copy(
        update={"conditions": result.conditions.model_copy(update={"rig": two})}
    )
    one, both = curves(result), curves(doubled)
    assert gpu_count(doubled) == 2
    for a, b in zip(one.throughput, both.throughput, strict=True):
        assert b.throughput_tok_s == pytest.approx(a.throughput_tok_s / 2)
        assert b.per_user_tok_s == a.per_user_tok_s


def test_client_bound_cells_are_left_out_of_a_cpu_run_drawn_per_machine():
    """The CPU llama-server run: three of its four cells are client-bound; only C=4 is drawn."""
    drawn = curves(real("cpu-llama-server"))
    assert drawn.gpu_count == 0 and drawn.unit == "per machine"
    assert drawn.scale_note() == "CPU run (no GPU): throughput is per machine"
    assert [p.concurrency for p in drawn.throughput] == [4]
    assert [p.concurrency for p in drawn.ttft] == [4]
    assert [(c.concurrency, c.reason) for c in drawn.throughput_left_out] == [
        (1, "client-bound"),
        (8, "client-bound"),
        (16, "client-bound"),
    ]
    assert left_out_note(drawn.ttft_left_out) == (
        "left out: C=1 burst (client-bound), C=8 burst (client-bound), C=16 burst (client-bound)"
    )


def test_an_invalid_cell_is_never_drawn_and_says_why():
    result = real("cpu-vllm")
    broken = result.cells[1].model_copy(
        update={"valid": False, "invalid_reasons": ["request 2: stream dropped", "request 3: x"]}
    )
    drawn = curves(
        result.model_copy(update={"cells": [result.cells[0], broken, *result.cells[2:]]})
    )
    assert broken.concurrency not in [p.concurrency for p in drawn.throughput]
    assert broken.concurrency not in [p.concurrency for p in drawn.ttft]
    assert drawn.throughput_left_out[0].reason == "invalid: request 2: stream dropped (+1 more)"


def test_without_rig_or_telemetry_the_total_is_drawn_and_said_so():
    result = real("cpu-vllm")
    bare = result.model_copy(
        update={
            "conditions": result.conditions.model_copy(update={"rig": None}),
            "perf_points": [],
        }
    )
    drawn = curves(bare)
    assert drawn.gpu_count is None and drawn.unit == "total"
    assert "not per GPU" in (drawn.scale_note() or "")


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_report_writes_both_charts_and_embeds_them(tmp_path, fmt):
    written = write_report(real("cpu-llama-server"), tmp_path, fmt)
    names = [p.name for p in written.plots]
    assert names == ["rates.png", "distribution.png", "throughput.png", "ttft.png"]
    for p in written.plots:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
    page = written.report.read_text(encoding="utf-8")
    embed = '<img src="{}"' if fmt == "html" else "]({})"
    assert all(embed.format(n) in page for n in ("throughput.png", "ttft.png"))
    assert "throughput per machine against tok/s per user" in page
    assert "TTFT chart: left out: C=1 burst (client-bound)" in page
