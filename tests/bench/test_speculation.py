"""Speculative decoding acceptance read from the engines' /metrics pages (no engine needed)."""

from __future__ import annotations

import json
import re

import pytest

from rigbook.bench import server_metrics
from rigbook.bench.result import load_result
from rigbook.bench.speculation import declared, summary
from tests.bench.helpers import bench_args, rigbook, synthetic_server

# As the pinned llama-server (--metrics, a draft model, --spec-synth-len 2.5) answered after one
# 64-token reply; the counters that do not matter here are left out.
LLAMA_PAGE = """\
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 35
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 64
# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 66
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total 40
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total 22
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 19
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 14
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 7
"""

# vLLM's names (v1 engine), two label sets (e.g. two engines) that are summed.
VLLM_PAGE = """\
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0"} 300
vllm:generation_tokens_total{engine="1"} 100
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0"} 50
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0"} 80
vllm:spec_decode_num_drafts_total{engine="1"} 20
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0"} 240
vllm:spec_decode_num_draft_tokens_total{engine="1"} 60
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0"} 120
vllm:spec_decode_num_accepted_tokens_total{engine="1"} 30
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 70
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 50
"""

LLAMA_PLAIN = """\
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 10
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 20
"""


def test_llama_server_counters_give_the_cells_acceptance():
    plain = server_metrics.parse(LLAMA_PLAIN)
    assert plain is not None and plain.speculation is None  # no speculator, no counters
    # A fresh server's page (every counter at 0), then the page after the reply.
    s = server_metrics.acceptance(
        server_metrics.parse(re.sub(r" \d+$", " 0", LLAMA_PAGE, flags=re.M)),
        server_metrics.parse(LLAMA_PAGE),
    )
    assert s is not None
    assert (s.engine, s.drafts, s.draft_tokens, s.accepted_tokens) == ("llama.cpp", 22, 66, 40)
    assert s.acceptance_rate == pytest.approx(40 / 66)
    # As llama-server logs it: "draft acceptance = 0.60606 (40 accepted / 66 generated), mean len = 2.82"
    assert s.mean_acceptance_length == pytest.approx(1 + 40 / 22)
    assert s.accepted_per_position == [19, 14, 7]
    assert summary(s).startswith("40 of 66 drafted tokens accepted (61 %)")


def test_vllm_counters_are_summed_over_label_sets_and_differenced():
    before = server_metrics.parse(VLLM_PAGE)
    after = server_metrics.parse(
        VLLM_PAGE.replace('{engine="1"} 20', '{engine="1"} 40')
        .replace('{engine="1"} 60', '{engine="1"} 120')
        .replace('{engine="1"} 30', '{engine="1"} 75')
    )
    s = server_metrics.acceptance(before, after)
    assert s is not None and s.engine == "vllm"
    assert (s.drafts, s.draft_tokens, s.accepted_tokens) == (20, 60, 45)
    assert s.acceptance_rate == pytest.approx(0.75) and s.mean_acceptance_length == 3.25
    assert s.accepted_per_position == [0, 0]


def test_no_counters_or_no_drafts_give_no_rates():
    plain = server_metrics.parse(LLAMA_PLAIN)
    assert server_metrics.acceptance(plain, plain) is None
    page = server_metrics.parse(LLAMA_PAGE)
    s = server_metrics.acceptance(page, page)  # a cell in which nothing was drafted
    assert s is not None and s.draft_tokens == 0
    assert s.acceptance_rate is None and s.mean_acceptance_length is None
    assert summary(s) == "the speculator drafted no tokens"


@pytest.mark.parametrize(
    "method,runs", [("mtp", True), ("none", False), ("None", False), (None, False), ("", False)]
)
def test_a_recipe_runs_a_speculator_unless_it_names_none(method, runs):
    assert declared(method) is runs


SPECULATIVE_RECIPE = "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3"


@pytest.mark.parametrize("recipe,warned", [(SPECULATIVE_RECIPE, True), (None, False)])
def test_a_speculative_recipe_without_acceptance_counters_is_warned(tmp_path, recipe, warned):
    """The synthetic server counts tokens in /metrics but no drafts: a recipe that says it runs a
    speculator (the seed record's MTP) then gets W_SPEC_NO_ACCEPTANCE on each cell."""
    out = tmp_path / "r.json"
    extra = f" --recipe {recipe}" if recipe else ""
    with synthetic_server("--rate 400 --tokens-per-chunk 4") as url:
        p = rigbook(
            *bench_args(url, out, "--profile quick --concurrency 1,2 --warmup 0" + extra),
            "--json",
        )
    assert p.returncode == 0, p.stdout + p.stderr
    result = load_result(out)
    assert all(c.server is not None and c.speculation is None for c in result.cells)
    codes = [w.split(":")[0] for w in result.warnings]
    assert codes.count("W_SPEC_NO_ACCEPTANCE") == (2 if warned else 0)
    if warned:
        assert result.perf_points and all(
            pp.conditions.speculative_method == "mtp" for pp in result.perf_points
        )
        assert "W_SPEC_NO_ACCEPTANCE" in json.dumps(json.loads(p.stdout)["warnings"])


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_report_shows_each_cells_acceptance(tmp_path, fmt):
    from rigbook.bench.report import write_report

    out = tmp_path / "r.json"
    with synthetic_server("--rate 400 --tokens-per-chunk 4") as url:
        p = rigbook(*bench_args(url, out, "--profile quick-repetitive --concurrency 1 --warmup 0"))
    assert p.returncode == 0, p.stdout + p.stderr
    result = load_result(out)
    page = write_report(result, tmp_path / "plain", fmt).report.read_text()
    assert "Speculative decoding" not in page  # no counters, no table
    counted = server_metrics.acceptance(
        server_metrics.parse(re.sub(r" \d+$", " 0", LLAMA_PAGE, flags=re.M)),
        server_metrics.parse(LLAMA_PAGE),
    )
    cell = result.cells[0].model_copy(update={"speculation": counted})
    with_spec = result.model_copy(update={"cells": [cell]})
    page = write_report(with_spec, tmp_path / "spec", fmt).report.read_text()
    assert "Speculative decoding" in page and "repetitive prompts" in page
    for figure in ("0.606", "2.82", "19, 14, 7"):
        assert figure in page


def test_a_recipes_speculator_round_trips_its_fields():
    from rigbook.errors import RigbookError
    from rigbook.recipe import dump_recipe, parse_recipe
    from rigbook.recipe.resolve import resolve_recipe

    recipe = resolve_recipe(SPECULATIVE_RECIPE)
    spec = recipe.ext.speculative
    assert spec is not None and (spec.method, spec.draft_length) == ("mtp", 3)  # MTP_DEPTH=3
    record = dump_recipe(recipe)
    record["rigbook"]["speculative"]["drafter_pin"] = "sha256:0123abcd"
    again = parse_recipe(record).ext.speculative
    assert (
        again is not None
        and again.model_dump()
        == spec.model_copy(update={"drafter_pin": "sha256:0123abcd"}).model_dump()
    )
    record["rigbook"]["speculative"]["draft_length"] = 0
    with pytest.raises(RigbookError) as caught:
        parse_recipe(record)
    assert caught.value.code == "E_RECIPE_INVALID"


def test_a_cells_acceptance_is_a_condition_of_its_perf_point_and_repeats_pool():
    from rigbook.bench.assemble import perf_point
    from rigbook.bench.result import Speculation
    from rigbook.bench.speculation import pooled_length
    from tests.compare.bench_results import make_result

    def spec(drafts: float | None, accepted: float) -> Speculation:
        return Speculation(
            engine="llama.cpp",
            drafts=drafts,
            draft_tokens=3 * (drafts or 1),
            accepted_tokens=accepted,
            mean_acceptance_length=1 + accepted / drafts if drafts else None,
        )

    result = make_result(energy=None)
    cell = result.cells[0].model_copy(update={"speculation": spec(20, 30)})
    pc = perf_point(cell, result.conditions, {"speculative_method": "ngram-simple"}).conditions
    assert pc is not None and pc.mean_acceptance_length == 2.5
    assert (
        perf_point(result.cells[0], result.conditions, {}).conditions.mean_acceptance_length is None
    )
    # Repeats pool their counters: (30 + 10) accepted over (20 + 20) drafts, not the mean of 2.5 and 1.5.
    assert pooled_length([spec(20, 30), spec(20, 10)]) == 2.0
    assert pooled_length([spec(10, 30), spec(30, 10)]) == 2.0
    assert pooled_length([spec(20, 30), None]) is None
    assert pooled_length([spec(None, 30)]) is None
