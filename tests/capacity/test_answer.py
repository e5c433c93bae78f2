"""The answer from judged probes: users, the cells either side, aggregate and per GPU, the binding
term, the spread of the boundary's runs, the sentence; and every SLO term read on requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbook.bench.metrics import percentile
from rigbook.bench.result import Distribution, RequestRecord, load_result
from rigbook.capacity.answer import decide, sentence
from rigbook.capacity.search import ProbeOutcome, SearchSettings
from rigbook.capacity.slo import Reading, parse_slo, read_term

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h200" / "result.json"
SLO = parse_slo("per_user_tok_s>=20,ttft_p99_ms<=2000")


def test_the_sentence_reads_as_the_issue_writes_it():
    assert (
        sentence(SLO, 12, "per_user_tok_s", None, None)
        == "This rig serves 12 users at ≥ 20 tok/s each, TTFT p99 ≤ 2 s (binding: per-user rate)."
    )


def _rec(i: int, ttft_ms: float, rate: float, itl_p99: float, ok: bool = True) -> RequestRecord:
    return RequestRecord(
        cell=0,
        index=i,
        prompt_index=0,
        sent_s=1.0,
        first_token_s=1.0 + ttft_ms / 1000.0,
        token_source="server_continuous",
        ok=ok,
        decode_tok_s=rate,
        itl_ms=Distribution(p99=itl_p99),
    )


def test_every_term_reads_its_percentile_over_the_counted_requests():
    ok = [_rec(i, 100.0 * (i + 1), 10.0 * (i + 1), 5.0 * (i + 1)) for i in range(10)]
    failed = _rec(10, 1.0, 1000.0, 1.0, ok=False)  # counted in the error rate only
    records = [*ok, failed]
    ttfts = [100.0 * (i + 1) for i in range(10)]
    rates = [10.0 * (i + 1) for i in range(10)]
    slo = parse_slo(
        "per_user_tok_s>=1,per_user_tok_s_p10>=1,ttft_p50_ms<=9999,ttft_p90_ms<=9999,"
        "ttft_p99_ms<=9999,itl_p99_ms<=9999,error_rate<=50%"
    )
    got = {t.name: read_term(t, records).value for t in slo.terms}
    assert got["per_user_tok_s"] == pytest.approx(percentile(rates, 50))
    assert got["per_user_tok_s_p10"] == pytest.approx(percentile(rates, 10))
    for q in (50, 90, 99):
        assert got[f"ttft_p{q}_ms"] == pytest.approx(percentile(ttfts, q))
    assert got["itl_p99_ms"] == pytest.approx(percentile([5.0 * (i + 1) for i in range(10)], 99))
    assert got["error_rate"] == pytest.approx(1 / 11)
    assert [t.name for t in slo.terms] == list(got)  # the fixed order: all seven kinds


def _outcome(cell, users, purpose, verdict, rate, ttft, agg, client_bound=False):
    readings = [
        Reading(term="per_user_tok_s", value=rate, passed=rate >= 20, margin=(rate - 20) / 20),
        Reading(term="ttft_p99_ms", value=ttft, passed=ttft <= 2000, margin=(2000 - ttft) / 2000),
        Reading(term="error_rate", value=0.0, passed=True, margin=0.0),
    ]
    return ProbeOutcome(
        cell=cell,
        concurrency=users,
        requests_planned=3 * users,
        purpose=purpose,
        verdict=verdict,
        readings=readings,
        binding=[r.term for r in readings if not r.passed] if verdict == "fail" else [],
        client_bound=client_bound,
        requests_ok=3 * users,
        aggregate_tok_s=agg,
    )


def _gpu_bench(gpus: int):
    bench = load_result(H200)
    rig = bench.conditions.rig
    assert rig is not None and len(rig.gpus) == 1
    rig = rig.model_copy(update={"gpus": rig.gpus * gpus})
    return bench.model_copy(update={"conditions": bench.conditions.model_copy(update={"rig": rig})})


def test_the_answer_names_its_cells_aggregate_per_gpu_binding_and_spread():
    outcomes = [
        _outcome(0, 1, "double", "pass", 60, 300, 60),
        _outcome(1, 2, "double", "pass", 45, 600, 90),
        _outcome(2, 4, "double", "fail", 18, 2600, 100),  # both fail: 10% and 30% past
        _outcome(3, 3, "bisect", "pass", 30, 1500, 90),
        _outcome(4, 3, "rerun", "pass", 33, 1400, 99),
        _outcome(5, 3, "rerun", "pass", 27, 1700, 81),
    ]
    answer = decide(SLO, SearchSettings(), outcomes, _gpu_bench(2))
    assert answer.users == 3 and answer.complete and not answer.lower_bound
    assert (answer.last_pass, answer.first_fail, answer.first_fail_concurrency) == (3, 2, 4)
    assert answer.boundary_cells == [3, 4, 5]
    assert answer.aggregate_tok_s == 90 and answer.gpu_count == 2
    assert answer.aggregate_tok_s_per_gpu == 45
    assert answer.binding == "ttft_p99_ms"  # the term furthest past its threshold at 4 users
    rate = next(s for s in answer.spread if s.term == "per_user_tok_s")
    assert (rate.values, rate.min, rate.max) == ([30, 33, 27], 27, 33)
    assert rate.spread_pct == pytest.approx(100 * 6 / 30)
    assert answer.sentence == (
        "This rig serves 3 users at ≥ 20 tok/s each, TTFT p99 ≤ 2 s (binding: TTFT p99)."
    )


def test_a_client_bound_failure_makes_the_answer_a_lower_bound():
    outcomes = [
        _outcome(0, 1, "double", "pass", 60, 300, 60),
        _outcome(1, 2, "double", "fail", 15, 600, 30, client_bound=True),
        _outcome(2, 1, "rerun", "pass", 58, 310, 58),
        _outcome(3, 1, "rerun", "pass", 61, 290, 61),
    ]
    answer = decide(SLO, SearchSettings(), outcomes, _gpu_bench(1))
    assert answer.users == 1 and answer.lower_bound and answer.binding is None
    assert "client set the pace at 2 users" in (answer.lower_bound_why or "")
    assert answer.sentence.startswith("This rig serves at least 1 user at ≥ 20 tok/s each")
    assert answer.aggregate_tok_s_per_gpu == answer.aggregate_tok_s == 60


def test_a_failed_rerun_is_not_averaged_away():
    outcomes = [
        _outcome(0, 1, "double", "pass", 60, 300, 60),
        _outcome(1, 2, "double", "pass", 40, 600, 80),
        _outcome(2, 4, "double", "fail", 15, 900, 60),
        _outcome(3, 3, "bisect", "pass", 21, 800, 63),
        _outcome(4, 3, "rerun", "fail", 19, 800, 57),
        _outcome(5, 2, "rerun", "pass", 41, 600, 82),
        _outcome(6, 2, "rerun", "pass", 39, 600, 78),
    ]
    answer = decide(SLO, SearchSettings(), outcomes, _gpu_bench(1))
    assert answer.users == 2 and answer.unstable and answer.first_fail_concurrency == 3
    assert answer.boundary_cells == [1, 5, 6] and answer.binding == "per_user_tok_s"
