"""Results produced by `rigbook bench` (built through its result model and saved as it saves them)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.compare import compare_refs
from rigbook.compare.sources import load_source
from tests.compare.bench_results import PROFILE, write_result
from tests.conftest import SEED_RECORD

runner = CliRunner()


@pytest.fixture
def with_energy(tmp_path):
    return write_result(tmp_path / "with-energy.json", energy={1: 0.9, 4: 0.35})


@pytest.fixture
def without_energy(tmp_path):
    return write_result(tmp_path / "without-energy.json", energy=None, rates={1: 500.0, 4: 1400.0})


def test_a_result_with_measured_energy_gets_tok_s_per_w_and_one_without_does_not(
    with_energy, without_energy
):
    pair = compare_refs([str(with_energy), str(without_energy)]).pairs[0]
    c1 = pair.points[0]
    assert c1.a.derived.tok_s_per_w == pytest.approx(1 / 0.9)
    assert c1.b.derived.tok_s_per_w is None
    assert "cap, not a draw" in c1.b.derived.tok_s_per_w_unavailable
    efficiency = next(v for v in pair.verdicts if v.aspect == "power_efficiency")
    assert efficiency.verdict == "not comparable"
    assert any(r.message.startswith("no measured energy on B") for r in efficiency.reasons)
    # Same model, rig, engine and profile: the raw throughput ratio is like for like.
    throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
    assert throughput.verdict == "comparable with caveats"
    assert {r.kind for r in throughput.reasons} == {
        "unknown_both"
    }  # only the context length is unstated
    assert round(c1.decode_ratio_pct, 1) == 104.0


def test_two_results_with_energy_compare_for_efficiency(tmp_path, with_energy):
    other = write_result(tmp_path / "other.json", energy={1: 1.2, 4: 0.5})
    pair = compare_refs([str(with_energy), str(other)]).pairs[0]
    efficiency = [
        next(v for v in p.verdicts if v.aspect == "power_efficiency") for p in pair.points
    ]
    assert [round(v.figure_pct, 1) for v in efficiency] == [133.3, 142.9]
    assert all(v.verdict != "not comparable" for v in efficiency)


def test_the_bandwidth_ceiling_of_a_known_model(with_energy):
    roof = compare_refs([str(with_energy), str(with_energy)]).pairs[0].points[0].a.derived.roofline
    assert roof is not None and roof.bandwidth_gb_s_total == 4800
    assert 0 < roof.pct_of_ceiling < 100


def test_run_level_conditions_fill_what_points_leave_null(tmp_path):
    path = write_result(
        tmp_path / "sparse.json", energy={1: 0.8, 4: 0.3}, full_point_conditions=False
    )
    c = load_source(str(path)).points[0].conditions
    assert (
        c.engine,
        c.bench_tool,
        c.bench_tool_version,
        c.reply_tokens,
        c.thinking,
        c.workload,
    ) == ("llama.cpp", "rigbook", "0.1.0", 400, False, "prose")
    assert (c.sampling.temperature, c.sampling.top_p) == (0.0, 1.0)
    assert (c.token_count_source, c.energy_j_per_token) == ("server_continuous", 0.8)


def test_cli_shows_the_energy_column_and_why_one_side_has_none(with_energy, without_energy):
    out = runner.invoke(
        app, ["compare", str(with_energy), str(without_energy)], env={"COLUMNS": "80"}
    )
    assert out.exit_code == 0, out.output
    # Eleven columns fit an 80-column terminal: headers and numbers whole, none cut to '…'.
    assert "tok/s/W" in out.output and "1.111" in out.output and "BW ceiling" in out.output
    assert "…" not in out.output and all(len(line) <= 80 for line in out.output.splitlines())
    assert "bandwidth ceiling, tok/s: A ≤" in out.output
    assert "B tok/s per W: no measured energy (a power limit is a cap, not a draw)" in out.output
    assert "hash" in out.output and "verified" in out.output


def test_an_edited_result_is_refused(with_energy, without_energy):
    doc = json.loads(with_energy.read_text())
    doc["perf_points"][0]["decode_tok_s"] = 9999.0
    with_energy.write_text(json.dumps(doc))
    out = runner.invoke(app, ["compare", str(with_energy), str(without_energy)])
    assert out.exit_code == 2
    assert "error[E_RESULT_INVALID]" in out.output and "Traceback" not in out.output


def test_a_result_against_a_recipe_with_no_numbers_says_so(with_energy):
    out = runner.invoke(
        app, ["compare", str(with_energy), "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"]
    )
    assert out.exit_code == 2
    assert "error[E_INPUT]" in out.output and "rigbook bench" in out.output


@pytest.fixture
def cpu_only(tmp_path):
    return write_result(
        tmp_path / "cpu.json", energy=None, rates={1: 48.0, 4: 49.0}, cpu_only="AMD EPYC"
    )


def test_a_cpu_result_against_a_gpu_result_is_no_scaling_figure(with_energy, cpu_only):
    pair = compare_refs([str(with_energy), str(cpu_only)]).pairs[0]
    b = pair.points[0].b.point.conditions
    assert (b.gpu_count, b.card) == (0, "CPU (AMD EPYC)")
    v = {x.aspect: x for x in pair.verdicts}
    assert v["scaling"].verdict == "not comparable"
    assert "GPU count differs: 1 vs 0 (no GPU against GPUs is no scaling step)" in [
        r.message for r in v["scaling"].reasons
    ]
    # A raw ratio still stands: the card and GPU count are caveats, stated.
    assert v["throughput"].verdict == "comparable with caveats"
    assert {r.message for r in v["throughput"].reasons if r.kind == "differs"} == {
        "GPU count differs: 1 vs 0",
        "card differs: NVIDIA H200 vs CPU (AMD EPYC)",
    }
    assert "ran on the CPU" in pair.points[0].b.derived.roofline_unavailable


def test_cli_says_what_differs_between_a_gpu_and_a_cpu_run_within_80_columns(with_energy, cpu_only):
    out = runner.invoke(app, ["compare", str(with_energy), str(cpu_only)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert "retention / scaling: not comparable" in out.output
    assert "! card differs: NVIDIA H200 vs CPU (AMD EPYC)" in out.output
    assert "card (A: NVIDIA H200)" not in out.output  # the CPU's card is no unknown
    assert all(len(line) <= 80 for line in out.output.splitlines())


def test_burst_against_sustained_says_so(tmp_path, with_energy):
    sustained = write_result(
        tmp_path / "sustained.json", energy={1: 0.9, 4: 0.35}, mode="sustained"
    )
    pair = compare_refs([str(with_energy), str(sustained)]).pairs[0]
    throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
    assert throughput.verdict == "comparable with caveats"
    assert "bench mode differs: burst vs sustained" in [r.message for r in throughput.reasons]
    out = runner.invoke(app, ["compare", str(with_energy), str(sustained)], env={"COLUMNS": "80"})
    assert "! bench mode differs: burst vs sustained" in out.output


def test_another_profile_says_so(tmp_path, with_energy):
    other = PROFILE.model_copy(update={"name": "seed", "content_hash": "sha256:" + "1" * 64})
    seed = write_result(tmp_path / "seed.json", energy={1: 0.9, 4: 0.35}, profile=other)
    throughput = next(
        v
        for v in compare_refs([str(with_energy), str(seed)]).pairs[0].verdicts
        if v.aspect == "throughput"
    )
    assert "bench profile differs: prose-400 v1 vs seed v1" in [
        r.message for r in throughput.reasons
    ]


def test_a_recipe_point_that_rigbook_measured_states_its_mode_in_its_notes(tmp_path):
    record = json.loads(SEED_RECORD.read_text())
    for p in record["perf_points"]:
        p["notes"] = "rigbook sustained, profile seed v1, 8 requests at concurrency 1"
    path = tmp_path / "noted.json"
    path.write_text(json.dumps(record))
    assert {p.conditions.bench_mode for p in load_source(str(path)).points} == {"sustained"}
    # Notes in any other words state no mode: it stays unknown.
    assert {p.conditions.bench_mode for p in load_source(str(SEED_RECORD)).points} == {None}


def test_the_seed_records_figures_state_no_rate_definition_and_compare_says_it_cannot_tell(
    tmp_path,
):
    """docs/compare.md: the seed record's decode_tok_s says which requests it aggregates, not
    whether TTFT is inside the window, so against a rigbook result (aggregate with TTFT, also for
    results written before the field existed) every lined-up point carries an unknown
    rate_definition caveat; never a match, never a silent difference."""
    old = write_result(tmp_path / "old.json", energy=None)
    raw = json.loads(old.read_text())
    for p in raw["perf_points"]:
        p["conditions"].pop("rate_definition", None)
    from rigbook.bench.result import BenchResult, save_result

    save_result(BenchResult.model_validate(raw).model_copy(update={"content_hash": None}), old)
    seed = load_source(str(SEED_RECORD))
    assert all(p.conditions.rate_definition is None for p in seed.points)
    ours = load_source(str(old))
    assert all(p.conditions.rate_definition == "aggregate_with_ttft" for p in ours.points)
    pairs = compare_refs([str(old), str(SEED_RECORD)]).pairs[0].points
    assert pairs
    for pair in pairs:
        throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
        reason = next(r for r in throughput.reasons if r.condition == "rate_definition")
        assert (reason.kind, reason.severity) == ("unknown_one_side", "caveat")
        mine = next(p for p in ours.points if p.concurrency == pair.concurrency)
        assert pair.a.point.decode_tok_s == mine.decode_tok_s  # the aggregate, not restated
