"""The seeds' own comparisons come out as the seeds say."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.compare import compare_refs
from tests.conftest import SEED_RECORD

GUIDE_2GPU = "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w"
GUIDE_4GPU = "glm-5-3-flash-on-4x-rtx-pro-6000-blackwell-tensorfold-250w"
SEED_TP2 = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"
SEED_TP4 = "glm-5-3-flash-qad-csf-on-4x-rtx-pro-6000-blackwell-tp4-reference"

runner = CliRunner()


def verdicts(pair) -> dict:
    return {v.aspect: v for v in pair.verdicts}


def test_guide_two_gpu_300w_vs_four_gpu_250w_is_no_power_efficiency_or_retention_measure():
    pair = compare_refs([GUIDE_2GPU, GUIDE_4GPU]).pairs[0]
    assert [
        (p.concurrency, p.a.point.decode_tok_s, p.b.point.decode_tok_s) for p in pair.points
    ] == [(1, 238.3, 265.9), (4, 448.7, 1063.6)]
    v = verdicts(pair)
    efficiency = v["power_efficiency"]
    assert efficiency.verdict == "not comparable"
    not_comparable = {r.condition: r for r in efficiency.reasons if r.severity == "not_comparable"}
    assert {"gpu_count", "power_limit_w_per_gpu", "energy"} <= set(not_comparable)
    assert not_comparable["gpu_count"].message == "GPU count differs: 2 vs 4"
    assert (
        not_comparable["power_limit_w_per_gpu"].message
        == "enforced power per card differs: 300 W vs 250 W"
    )
    scaling = v["scaling"]
    assert scaling.verdict == "not comparable"
    assert any(r.kind == "two_factors" for r in scaling.reasons)
    # A raw ratio of the numbers still stands, with both differences as caveats.
    assert v["throughput"].verdict == "comparable with caveats"
    assert {r.condition for r in v["throughput"].reasons if r.kind == "differs"} == {
        "gpu_count",
        "power_limit_w_per_gpu",
    }


def test_guide_case_on_the_command_line_prints_both_reasons():
    out = runner.invoke(app, ["compare", GUIDE_2GPU, GUIDE_4GPU], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "power efficiency (tok/s per W): not comparable" in out.output
    assert "retention / scaling: not comparable" in out.output
    assert "✗ GPU count differs: 2 vs 4" in out.output
    assert "✗ enforced power per card differs: 300 W vs 250 W" in out.output


@pytest.mark.parametrize("tp2", [SEED_TP2, str(SEED_RECORD)], ids=["catalog", "public-record-file"])
def test_seed_tp2_is_about_68_percent_of_tp4_with_the_card_count_caveat(tp2):
    pair = compare_refs([tp2, SEED_TP4]).pairs[0]
    ratios = [(p.concurrency, round(p.decode_ratio_pct, 1)) for p in pair.points]
    assert ratios == [(1, 67.6), (4, 70.3), (8, 69.9)]
    v = verdicts(pair)
    for aspect in ("throughput", "scaling"):
        assert v[aspect].verdict == "comparable with caveats"
        gpu = next(r for r in v[aspect].reasons if r.condition == "gpu_count")
        assert (gpu.severity, gpu.a, gpu.b) == ("caveat", "2", "4")
    assert v["power_efficiency"].verdict == "not comparable"
    # The same checkpoint on both sides: the quantisation is known and equal, so it is no reason.
    assert all("quant" in p.same for p in pair.points)


def test_seed_case_on_the_command_line_prints_the_ratios_and_caveat():
    out = runner.invoke(app, ["compare", SEED_TP2, SEED_TP4], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "A's decode tok/s is 67.6% (c1), 70.3% (c4), 69.9% (c8) of B's" in out.output
    assert (
        "overall: A's decode tok/s is 69.3% of B's across 3 points (geometric mean)" in out.output
    )
    assert "! GPU count differs: 2 vs 4" in out.output
    assert "raw throughput ratio: comparable with caveats" in out.output
    # Neither recipe states its power per card, so the output says so for both sides.
    assert "? unknown on both sides: workload, enforced power per card" in out.output


def test_seed_case_as_json_and_markdown():
    out = runner.invoke(app, ["compare", SEED_TP2, SEED_TP4, "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["kind"] == "rigbook.compare"
    assert [round(p["decode_ratio_pct"], 1) for p in doc["pairs"][0]["points"]] == [
        67.6,
        70.3,
        69.9,
    ]
    # The record's "about 68% of four-card speed" as one figure: the geometric mean over the three points.
    throughput = next(v for v in doc["pairs"][0]["verdicts"] if v["aspect"] == "throughput")
    assert (round(throughput["figure_pct"], 1), throughput["figure_points"]) == (69.3, 3)
    md = runner.invoke(app, ["compare", SEED_TP2, SEED_TP4, "--format", "md"])
    assert md.exit_code == 0, md.output
    assert "| 1 | 1 | 207.0 | 306.0 | 67.6% |" in md.output
    assert "**power efficiency (tok/s per W): not comparable**" in md.output
    assert (
        "- overall: A's decode tok/s is 69.3% of B's across 3 points (geometric mean)" in md.output
    )
