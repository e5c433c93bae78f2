"""The search's rule on scripted cells: what it probes next and what it settles on.

The known-curve tests run it against real HTTP; these pin the cases a real server gives only by
chance (a boundary re-run that fails) in a second, through the same Probe seam.
"""

from __future__ import annotations

import asyncio

from rigbook.bench.metrics import build_cell
from rigbook.bench.result import CellTelemetry, Distribution, RequestRecord
from rigbook.capacity.search import ProbePlan, SearchSettings, search
from rigbook.capacity.slo import parse_slo


class Scripted:
    """A probe whose every request decodes at ``rate(concurrency, run)`` tok/s."""

    def __init__(self, rate):
        self.rate, self.plans, self.runs = rate, [], {}

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
                    first_token_s=0.05,
                    last_token_s=1.0,
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
            client=None,
            cut_short=stopped,
        )


def run(rate, slo="per_user_tok_s>=50", **settings):
    probe = Scripted(rate)
    outcomes = asyncio.run(search(probe, parse_slo(slo), SearchSettings(**settings)))
    return probe, outcomes


def test_doubling_then_bisection_then_reruns():
    _probe, outcomes = run(lambda c, r: 100 / c**0.5)  # 50 tok/s at 4 users, 44.7 at 5
    assert [o.concurrency for o in outcomes] == [1, 2, 4, 8, 6, 5, 4, 4]
    assert [o.purpose for o in outcomes][-2:] == ["rerun", "rerun"]
    # A failing probe stops once its median is decided: at 8 users (24 requests), 13 slow ones.
    assert all(o.stopped_early for o in outcomes if o.verdict == "fail")
    assert outcomes[3].requests_ok == 13 and outcomes[3].requests_planned == 24


def test_a_failed_rerun_lowers_the_answer_and_is_never_averaged_away():
    # 6 users pass the first time, then fail on their re-run; 5 always pass.
    _probe, outcomes = run(lambda c, r: 60 if c <= 5 else (55 if c == 6 and r == 0 else 40))
    assert [o.concurrency for o in outcomes] == [1, 2, 4, 8, 6, 7, 6, 5, 5, 5]
    refuted = [o for o in outcomes if o.purpose == "rerun" and o.verdict == "fail"]
    assert [o.concurrency for o in refuted] == [6]


def test_never_probes_above_max_concurrency_or_a_failed_level():
    probe, outcomes = run(lambda c, r: 60, max_concurrency=5, reruns=0)
    assert [o.concurrency for o in outcomes] == [1, 2, 4, 5]
    probe, outcomes = run(lambda c, r: 60 if c < 3 else 10)
    assert max(p.concurrency for p in probe.plans) == 4
    for i, o in enumerate(outcomes):
        assert all(o.concurrency < f.concurrency for f in outcomes[:i] if f.verdict == "fail")


def test_requests_per_probe_follow_the_rounds():
    probe, _ = run(lambda c, r: 60 if c < 3 else 10, rounds=4, min_requests=6)
    assert [(p.concurrency, p.requests) for p in probe.plans][:3] == [(1, 6), (2, 8), (4, 16)]
