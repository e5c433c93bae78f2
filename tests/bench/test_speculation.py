"""Speculative decoding acceptance read from the engines' /metrics pages (no engine needed)."""

from __future__ import annotations

import json
import re

import pytest

from rigbook.bench import server_metrics
from rigbook.bench.result import load_result
from rigbook.bench.speculation import declared, summary
from tests.bench.helpers import bench_args, rigbook, synthetic_server
from tests.conftest import SEED_RECORD

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


@pytest.mark.parametrize(
    "recipe,warned",
    # The public record has no rigbook block: its launch's SPECULATOR=mtp says it drafts.
    [(SPECULATIVE_RECIPE, True), (str(SEED_RECORD), True), (None, False)],
    ids=["catalog", "public-record", "no-recipe"],
)
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
    codes = [w.code for w in result.warnings]
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
    assert "(2 responses)" not in page
    # The responses' own counts (30 of 40 and 10 of 26) beside the counters, which they match.
    from rigbook.bench.speculation import with_requests

    per = with_requests(counted, [_record(0, 40, 30), _record(1, 26, 10)])
    cell = result.cells[0].model_copy(update={"speculation": per})
    page = write_report(result.model_copy(update={"cells": [cell]}), tmp_path / "per", fmt)
    text = page.report.read_text()
    assert "responses agree with counters" in text and "(2 responses)" in text
    for figure in ("0.421 / 0.567 / 0.713", "yes"):
        assert figure in text


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
    assert pc is not None and pc.speculative_acceptance_length == 2.5
    assert (
        perf_point(result.cells[0], result.conditions, {}).conditions.speculative_acceptance_length
        is None
    )
    # Repeats pool their counters: (30 + 10) accepted over (20 + 20) drafts, not the mean of 2.5 and 1.5.
    assert pooled_length([spec(20, 30), spec(20, 10)]) == 2.0
    assert pooled_length([spec(10, 30), spec(30, 10)]) == 2.0
    assert pooled_length([spec(20, 30), None]) is None
    assert pooled_length([spec(None, 30)]) is None


# The pinned llama-server's last event of a stream with a speculator (ngram-simple): the request's
# own drafted and accepted tokens in its timings.
LLAMA_FINAL = (
    b'{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1796645686,'
    b'"id":"chatcmpl-D","model":"m","system_fingerprint":"b1-0c1e570",'
    b'"object":"chat.completion.chunk","timings":{"cache_n":0,"prompt_n":50,"prompt_ms":742.2,'
    b'"prompt_per_token_ms":14.8,"prompt_per_second":67.4,"predicted_n":15,"predicted_ms":537.1,'
    b'"predicted_per_token_ms":38.4,"predicted_per_second":26.1,"draft_n":16,"draft_n_accepted":9}}'
)


def test_a_responses_own_draft_counts_are_read_by_both_parsers_and_cross_workers():
    from rigbook.bench import compiled
    from rigbook.bench.worker_protocol import PackedRaw
    from rigbook.openai.stream import RawRequest, apply_payload

    raw = RawRequest(sent=0.0)
    apply_payload(raw, b'{"choices":[{"delta":{"content":"a"}}]}', 1.0)
    apply_payload(raw, LLAMA_FINAL, 2.0)
    assert (raw.draft_tokens, raw.draft_accepted, raw.finish_reason) == (16, 9, "stop")
    again = PackedRaw.pack(raw).unpack()
    assert (again.draft_tokens, again.draft_accepted) == (16, 9)
    # A token event that carries timings (llama-server's timings_per_token) is left to the
    # Python parser by the compiled reader, which would otherwise skip the counts.
    token = b'{"choices":[{"delta":{"content":"a"}}],"timings":{"draft_n":3,"draft_n_accepted":1}}'
    if compiled.available():
        from rigbook.bench._reader import token_event

        assert token_event(token) is None
    raw = RawRequest(sent=0.0)
    apply_payload(raw, token, 1.0)
    assert (raw.events, raw.draft_tokens, raw.draft_accepted) == (1, 3, 1)


def _record(index: int, drafted: int | None, accepted: int | None, ok: bool = True):
    from rigbook.bench.result import RequestRecord

    return RequestRecord(
        cell=0,
        index=index,
        prompt_index=index,
        sent_s=0.0,
        token_source="server_final",
        ok=ok,
        draft_tokens=drafted,
        accepted_draft_tokens=accepted,
    )


def test_per_request_acceptance_is_cross_checked_with_the_counters():
    from rigbook.bench.speculation import with_requests

    counted = server_metrics.acceptance(
        server_metrics.parse(re.sub(r" \d+$", " 0", LLAMA_PAGE, flags=re.M)),
        server_metrics.parse(LLAMA_PAGE),
    )
    assert counted is not None  # 40 of 66 drafted tokens accepted over the cell
    # Two responses report 30 of 40 and 10 of 26; a third drafted nothing and says nothing.
    records = [_record(0, 40, 30), _record(1, 26, 10), _record(2, None, None)]
    s = with_requests(counted, records)
    assert s is not None and s.per_request is not None and s.draft_tokens == 66
    per = s.per_request
    assert (per.requests, per.draft_tokens, per.accepted_tokens) == (2, 66, 40)
    assert per.matches_counters is True
    assert per.acceptance_rate.min == pytest.approx(10 / 26) and per.acceptance_rate.max == 0.75
    assert "per request, median acceptance rate" in summary(s) and "agree" in summary(s)
    # The responses and the counters disagree: said, not hidden.
    off = with_requests(counted, [_record(0, 40, 30), _record(1, 26, 9)])
    assert off is not None and off.per_request and off.per_request.matches_counters is False
    assert "(responses: 39 of 66, not the counters')" in summary(off)
    # A request that did not finish reports nothing, so the sums are not judged.
    cut = with_requests(counted, [_record(0, 40, 30), _record(1, 20, 9, ok=False)])
    assert cut is not None and cut.per_request and cut.per_request.matches_counters is None
    # No counters (llama-server without --metrics): the responses alone give the acceptance.
    alone = with_requests(None, records[:2])
    assert alone is not None and alone.engine == "llama.cpp" and alone.drafts is None
    assert (alone.draft_tokens, alone.accepted_tokens) == (66, 40)
    assert alone.acceptance_rate == pytest.approx(40 / 66) and alone.mean_acceptance_length is None
    # No response reported drafts: the counters stand as they are.
    assert with_requests(counted, [_record(0, None, None)]) == counted
    assert with_requests(None, [_record(0, None, None)]) is None


def test_results_written_before_the_acceptance_fields_keep_their_hash():
    """The fields added for per-request and per-point acceptance are left out of the hash while
    empty (LATER_FIELDS): a committed result, re-built as a model, still verifies (its warnings,
    records now, as the "CODE: message" text they were written as)."""
    from pathlib import Path

    from rigbook.hashing import content_hash

    published = sorted((Path(__file__).parents[1] / "fixtures" / "results").rglob("result.json"))
    assert published
    for path in published:
        result = load_result(path)
        body = result.hashed_body() | {"warnings": [w.line for w in result.warnings]}
        assert content_hash(body) == result.content_hash, path
