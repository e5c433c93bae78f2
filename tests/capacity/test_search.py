"""The search's rule on scripted cells: what it probes next and what it settles on.

The known-curve tests run it against real HTTP; these pin the cases a real server gives only by
chance (a boundary re-run that fails) in a second, through the same Probe seam.
"""

from __future__ import annotations

import asyncio
import random

from rigbook.bench.metrics import build_cell
from rigbook.bench.result import CellTelemetry, ClientLoad, Distribution, RequestRecord
from rigbook.capacity.answer import decide
from rigbook.capacity.present import detail_lines, probe_line
from rigbook.capacity.result import CapacityResult
from rigbook.capacity.search import ProbePlan, SearchSettings, search
from rigbook.capacity.slo import parse_slo
from tests.capacity.test_answer import _gpu_bench


class Scripted:
    """A probe whose every request decodes at ``rate(concurrency, run)`` tok/s; its first token
    comes after ``ttft()`` seconds (drawn per request), and ``client`` is the client's load the
    cell reports (None: not client-bound)."""

    def __init__(self, rate, ttft=lambda: 0.05, client: ClientLoad | None = None):
        self.rate, self.ttft, self.client, self.plans, self.runs = rate, ttft, client, [], {}

    async def __call__(self, plan: ProbePlan, watch):
        run = self.runs.get(plan.concurrency, 0)
        self.runs[plan.concurrency] = run + 1
        self.plans.append(plan)
        records, stopped = [], False
        for i in range(plan.requests):
            records.append(
                RequestRecord(
                    cell=len(self.plans) - 1,
                    index=i,
                    prompt_index=0,
                    sent_s=0.0,
                    first_token_s=(first := self.ttft()),
                    last_token_s=first + 1.0,
                    output_tokens=30,
                    token_source="server_continuous",
                    ok=True,
                    decode_tok_s=self.rate(plan.concurrency, run),
                    itl_ms=Distribution(),
                )
            )
            if watch(records):
                stopped = True
                break
        return build_cell(
            index=len(self.plans) - 1,
            mode="burst",
            concurrency=plan.concurrency,
            records=records,
            requests_planned=plan.requests,
            duration_s=None,
            window=None,
            telemetry=CellTelemetry(available=False),
            client=self.client,
            cut_short=stopped,
        )


def run(rate, slo="per_user_tok_s>=50", ttft=lambda: 0.05, client=None, **settings):
    probe = Scripted(rate, ttft, client)
    outcomes = asyncio.run(search(probe, parse_slo(slo), SearchSettings(**settings)))
    return probe, outcomes


def answer(outcomes, slo="per_user_tok_s>=50", **settings):
    """The answer the outcomes support."""
    return decide(parse_slo(slo), SearchSettings(**settings), outcomes, _gpu_bench(1))


def test_doubling_then_bisection_then_reruns():
    _probe, outcomes = run(lambda c, r: 100 / c**0.5)  # 50 tok/s at 4 users, 44.7 at 5
    # 3, never run, is checked before the boundary's re-runs.
    assert [o.concurrency for o in outcomes] == [1, 2, 4, 8, 6, 5, 3, 4, 4]
    assert [o.purpose for o in outcomes][-3:] == ["check", "rerun", "rerun"]
    # A failing probe stops once its median is decided: at 8 users (24 requests), 13 slow ones.
    assert all(o.stopped_early for o in outcomes if o.verdict == "fail")
    assert outcomes[3].requests_ok == 13 and outcomes[3].requests_planned == 24


def test_a_failed_rerun_lowers_the_answer_and_is_never_averaged_away():
    # 6 users pass the first time, then fail on their re-run; 5 always pass.
    _probe, outcomes = run(lambda c, r: 60 if c <= 5 else (55 if c == 6 and r == 0 else 40))
    assert [o.concurrency for o in outcomes] == [1, 2, 4, 8, 6, 7, 3, 5, 6, 5, 5]
    refuted = [o for o in outcomes if o.purpose == "rerun" and o.verdict == "fail"]
    assert [o.concurrency for o in refuted] == [6]


def test_never_probes_above_max_concurrency_or_a_failed_level():
    probe, outcomes = run(lambda c, r: 60, max_concurrency=5, reruns=0)
    assert [o.concurrency for o in outcomes] == [1, 2, 4, 5, 3]
    probe, outcomes = run(lambda c, r: 60 if c < 3 else 10)
    assert max(p.concurrency for p in probe.plans) == 4
    for i, o in enumerate(outcomes):
        assert all(o.concurrency < f.concurrency for f in outcomes[:i] if f.verdict == "fail")


def test_requests_per_probe_follow_the_rounds():
    probe, _ = run(lambda c, r: 60 if c < 3 else 10, rounds=4, min_requests=6)
    assert [(p.concurrency, p.requests) for p in probe.plans][:3] == [(1, 6), (2, 8), (4, 16)]


def _spiky(seed: int):
    """First tokens of 50 ms, but 3 s for one request in 20 (seeded): the true TTFT p99 is 3 s."""
    rng = random.Random(seed)
    return lambda: 3.0 if rng.random() < 0.05 else 0.05


def test_a_one_in_twenty_spike_is_no_user_in_at_least_19_of_20_seeds():
    """A p99 term rests on enough requests to see a 1 % tail (299): at 8 requests a level passed
    whenever its one or two spikes missed the top two places."""
    answers = []
    for seed in range(20):
        _probe, outcomes = run(lambda c, r: 60, slo="ttft_p99_ms<=1000", ttft=_spiky(seed))
        answers.append(answer(outcomes, slo="ttft_p99_ms<=1000").users)
        assert outcomes[0].requests_planned == 299
    assert sum(a == 0 for a in answers) >= 19, answers


def test_a_capped_probe_says_which_tail_it_could_miss():
    probe, outcomes = run(
        lambda c, r: 60, slo="ttft_p99_ms<=1000", max_concurrency=2, max_requests=12, reruns=0
    )
    assert [p.requests for p in probe.plans] == [12, 12]
    reading = next(r for r in outcomes[0].readings if r.term == "ttft_p99_ms")
    assert (reading.requests, reading.needed) == (12, 299)
    got = answer(outcomes, slo="ttft_p99_ms<=1000", max_concurrency=2, reruns=0)
    assert got.users == 2
    assert got.few_requests == [
        "TTFT p99 judged on 12 requests at 1 user, fewer than the 299 its rule asks for a 1% "
        "tail: a tail as common as 1 in 4 could go unseen"
    ]
    assert "TTFT p99 judged on 12 requests" in got.sentence


def test_a_dip_below_the_answer_is_found_and_lowers_it():
    """25 tok/s at 6 users against 30, 33-35 at 7-9: doubling and bisection settle on 9 without
    running 6; the levels below it that no probe ran are checked, and the answer is 5."""
    table = {1: 40, 2: 40, 3: 40, 4: 40, 5: 40, 6: 25, 7: 33, 8: 34, 9: 35}
    _probe, outcomes = run(lambda c, r: table.get(c, 20), slo="per_user_tok_s>=30")
    got = answer(outcomes, slo="per_user_tok_s>=30")
    assert got.users == 5 and got.first_fail_concurrency == 6 and got.unprobed == []
    assert "check" in [o.purpose for o in outcomes]
    # Every level below the answer was run, and every run of it passed.
    assert {o.concurrency for o in outcomes} >= set(range(1, 6))
    assert all(o.verdict == "pass" for o in outcomes if o.concurrency <= 5)


def test_levels_left_unchecked_are_named():
    _probe, outcomes = run(lambda c, r: 60 if c <= 40 else 10, checks=2)
    got = answer(outcomes, checks=2)
    assert got.users == 40 and sum(o.purpose == "check" for o in outcomes) == 2
    ran = {o.concurrency for o in outcomes}
    assert got.unprobed == [c for c in range(1, 40) if c not in ran] and got.unprobed
    assert "Levels not probed below it: " in got.sentence


def test_after_too_many_failed_reruns_the_answer_says_it_rests_on_one_run():
    """Each level passes its first run and fails its re-run: after four failed re-runs the search
    stops, and the answer says it rests on one run instead of a spread of 0 %."""
    _probe, outcomes = run(lambda c, r: 60 if r == 0 and c <= 8 else 40)
    got = answer(outcomes)
    assert sum(o.purpose == "rerun" and o.verdict == "fail" for o in outcomes) == 4
    assert got.users == 4 and not got.confirmed and len(got.boundary_cells) == 1
    rate = next(s for s in got.spread if s.term == "per_user_tok_s")
    assert rate.values == [60] and rate.spread_pct is None
    assert "Unconfirmed: 4 users rests on 1 run(s), not 3" in got.sentence


def _lagging(lag_ms: float) -> ClientLoad:
    return ClientLoad(
        loop_lag_ms=Distribution(),
        loop_lag_worst_ms=lag_ms,
        cpu_s=1.0,
        wall_s=1.0,
        cpu_fraction=1.0,
        client_bound=True,
        reason="scripted",
    )


def test_a_miss_far_larger_than_the_clients_lag_is_the_servers():
    """A client-bound probe whose TTFT is 2.8 s against 1 s: a lag of 25 ms cannot have made that
    miss, so the answer is no lower bound and names the binding term; a lag of 2 s could."""
    slo = "ttft_p50_ms<=1000"
    _probe, outcomes = run(lambda c, r: 60, slo=slo, ttft=lambda: 2.8, client=_lagging(25))
    got = answer(outcomes, slo=slo)
    assert outcomes[0].client_bound and outcomes[0].client_could_flip is False
    assert got.users == 0 and not got.lower_bound and got.binding == "ttft_p50_ms"
    _probe, outcomes = run(lambda c, r: 60, slo=slo, ttft=lambda: 2.8, client=_lagging(2000))
    got = answer(outcomes, slo=slo)
    assert outcomes[0].client_could_flip is True and got.lower_bound and got.binding is None


def test_the_printed_lines_say_what_each_percentile_rests_on_and_a_lone_run_has_no_spread():
    _probe, outcomes = run(lambda c, r: 60 if r == 0 and c <= 8 else 40)
    line = probe_line(outcomes[0])
    assert line.startswith("probe 1: 1 user (double) pass — per_user_tok_s 60 (n=8), error_rate")
    got = answer(outcomes)
    lines = detail_lines(CapacityResult.model_construct(answer=got))
    assert "per_user_tok_s over the boundary runs: 60 to 60 tok/s (one run: no spread)" in lines
