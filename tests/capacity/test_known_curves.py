"""Capacity on the synthetic server, whose curve is known: the answer is the true one, or one below.

Each curve serves real HTTP on loopback from its own process; the true users-at-SLO comes from
the curve itself (:meth:`Curve.users_at`), never from the code under test.
"""

from __future__ import annotations

import httpx
import pytest

from rigbook.bench.result import load_result
from rigbook.capacity.result import load_capacity
from rigbook.errors import RigbookError
from rigbook_testkit.synthetic_curves import Curve
from tests.capacity.helpers import capacity, serve


# One server per curve for the module: tests of the same curve run in turn on it (each probe
# after the first waits for an idle server, and a search's first probe follows a finished one).
@pytest.fixture(scope="module")
def server(request):
    proc, url = serve(request.param)
    yield request.param, url
    proc.terminate()
    proc.wait(10)


def served(url: str) -> list[dict]:
    return httpx.get(url + "/_record").json()["requests"]


def assert_found(result, true: int) -> None:
    assert result.answer.users in (true, true - 1), (
        result.answer.users,
        true,
        result.answer.sentence,
    )
    assert result.answer.complete
    # On a loaded machine the bench may find the client late at the failing level; the answer is
    # then marked a lower bound and says why, but the level found is the same.
    if result.answer.lower_bound:
        assert "client set the pace" in result.answer.lower_bound_why
        assert result.answer.sentence.startswith(
            f"This rig serves at least {result.answer.users} users"
        )
        assert result.answer.binding is None
    # The rule the answer follows: every run at the answer passed, the level above failed.
    runs = [p for p in result.probes if p.concurrency == result.answer.users]
    assert runs and all(p.verdict == "pass" for p in runs)
    assert len(runs) == 1 + result.settings.reruns
    assert result.answer.first_fail_concurrency == result.answer.users + 1


# Thresholds sit about 10% from the curve on both sides of the answer: on this project's shared
# two-core machine a loaded server runs late by a few per cent, and the test must not measure that.
HYPERBOLIC = Curve(shape="hyperbolic", rate_tok_s=120, falloff=1.0)  # 30 tok/s at 4, 24 at 5
CLIFF = Curve(shape="cliff", rate_tok_s=100, knee=6, drop=0.4)  # 100 up to 6, 40 at 7
TTFT = Curve(shape="linear", rate_tok_s=100, falloff=0.02, ttft_s=0.02, ttft_per_user_s=0.1)


@pytest.mark.parametrize("server", [HYPERBOLIC], indirect=True)
def test_hyperbolic_curve(server, tmp_path):
    curve, url = server
    true = curve.users_at(min_rate=27)
    assert true == 4
    result = capacity(url, tmp_path / "c.json", "per_user_tok_s>=27")
    assert_found(result, true)
    # Doubling to the first failure, then bisection: 1, 2, 4, 8, then 6 and 5, then 3 (the one
    # level below the answer no probe ran), then re-runs of 4.
    expected = [1, 2, 4, 8, 6, 5, 3, 4] if result.answer.users == 4 else [1, 2, 4, 3, 3]
    assert [p.concurrency for p in result.probes] == expected
    assert "users at ≥ 27 tok/s each (" in result.answer.sentence
    failed = next(p for p in result.probes if p.cell == result.answer.first_fail)
    assert failed.binding == ["per_user_tok_s"]
    if not result.answer.lower_bound:
        assert result.answer.binding == "per_user_tok_s"
        assert result.answer.sentence.endswith("(binding: per-user rate).")


@pytest.mark.parametrize("server", [CLIFF], indirect=True)
def test_cliff_one_more_user_breaks_it(server, tmp_path):
    curve, url = server
    true = curve.users_at(min_rate=90)
    assert true == 6
    # The p99 term would ask 299 requests a probe; capped, the answer says what it could miss.
    result = capacity(
        url,
        tmp_path / "c.json",
        "per_user_tok_s>=90,ttft_p99_ms<=2000",
        reruns=2,
        max_requests=8,
    )
    assert_found(result, true)
    first_fail = next(p for p in result.probes if p.cell == result.answer.first_fail)
    # Past the cliff every stream runs at 40 tok/s: the failing level misses by far, not by noise.
    rate_there = next(r.value for r in first_fail.readings if r.term == "per_user_tok_s")
    assert rate_there < 0.6 * 90 or result.answer.users == true - 1
    # The spread over the boundary's runs is reported, and a steady server's is small.
    rate = next(s for s in result.answer.spread if s.term == "per_user_tok_s")
    assert len(rate.values) == 3 and rate.spread_pct < 10 and min(rate.values) >= 90
    # The aggregate is the boundary runs' median, and no more than the curve allows (the first
    # token and the gaps between one user's requests only lower it).
    runs = sorted(
        result.bench.cells[i].metrics.aggregate_tok_s for i in result.answer.boundary_cells
    )
    assert result.answer.aggregate_tok_s == runs[1]
    assert 0 < result.answer.aggregate_tok_s <= 1.02 * result.answer.users * 100


@pytest.mark.parametrize("server", [TTFT], indirect=True)
def test_first_token_latency_binds(server, tmp_path):
    curve, url = server
    true = curve.users_at(min_rate=50, max_ttft_s=0.270)
    assert true == 3  # 220 ms at 3 users, 320 ms at 4; the rate allows 26
    # A p99 wants 299 requests a probe; capped at 6, the answer says which tail it could miss.
    result = capacity(
        url, tmp_path / "c.json", "per_user_tok_s>=50,ttft_p99_ms<=270", max_requests=6
    )
    assert_found(result, true)
    assert result.probes[0].requests_planned == 6
    assert any(
        w.line.startswith("W_CAPACITY_FEW_REQUESTS: TTFT p99 judged on") for w in result.warnings
    )
    # The published point carries the same limit.
    assert "; TTFT p99 judged on " in (result.perf_points[0].notes or "")
    failed = next(p for p in result.probes if p.cell == result.answer.first_fail)
    assert failed.binding == ["ttft_p99_ms"]
    if not result.answer.lower_bound:
        assert "(binding: TTFT p99)" in result.answer.sentence


# HYPERBOLIC twice as fast, and its bound with it: the noise (15%) dwarfs the timer's jitter.
@pytest.mark.parametrize(
    "server",
    [Curve(shape="hyperbolic", rate_tok_s=240, falloff=1.0, noise=0.15, seed=7)],
    indirect=True,
)
def test_noisy_server(server, tmp_path):
    """Each request gets its own rate (sd 15%); more rounds and the re-runs keep the answer true."""
    curve, url = server
    true = curve.users_at(min_rate=54)
    result = capacity(url, tmp_path / "c.json", "per_user_tok_s>=54", rounds=4, reruns=2)
    assert result.answer.users in (true, true - 1), result.answer.sentence
    rate = next(s for s in result.answer.spread if s.term == "per_user_tok_s")
    assert len(rate.values) == 3 and all(v >= 54 for v in rate.values)
    # The per-request rates really are spread: the noise is the server's, not the test's.
    boundary = result.bench.cells[result.answer.last_pass].metrics.per_request_decode_tok_s
    assert boundary.p90 > 1.1 * boundary.p10


# Refusals bind, far below the rate's limit: the rate can be high and the probes short.
@pytest.mark.parametrize(
    "server", [Curve(shape="hyperbolic", rate_tok_s=400, falloff=0.05, fail_above=6)], indirect=True
)
def test_never_pushes_past_the_first_failing_level(server, tmp_path):
    curve, url = server
    true = curve.users_at(min_rate=20)
    assert true == 6
    result = capacity(url, tmp_path / "c.json", "per_user_tok_s>=20")
    assert_found(result, true)
    failed = next(p for p in result.probes if p.cell == result.answer.first_fail)
    assert "error_rate" in failed.binding and failed.stopped_early
    # No probe ran above a level that had already failed.
    for i, p in enumerate(result.probes):
        assert all(p.concurrency < q.concurrency for q in result.probes[:i] if q.verdict == "fail")
    assert max(p.concurrency for p in result.probes) == 8
    # Every failing probe stopped at once: few requests were refused in all.
    refused = sum(p.requests_failed for p in result.probes)
    assert 0 < refused <= 2 * sum(p.verdict == "fail" for p in result.probes)
    assert len(served(url)) < sum(p.requests_planned for p in result.probes)


# CLIFF three times as fast: no level up to its knee comes near the bound.
@pytest.mark.parametrize(
    "server", [Curve(shape="cliff", rate_tok_s=300, knee=6, drop=0.4)], indirect=True
)
def test_every_level_passing_is_a_lower_bound(server, tmp_path):
    _curve, url = server
    result = capacity(url, tmp_path / "c.json", "per_user_tok_s>=90", max_concurrency=6)
    assert result.answer.users == 6 and result.answer.lower_bound
    assert [p.concurrency for p in result.probes] == [1, 2, 4, 6, 3, 5, 6]
    assert result.answer.sentence.startswith("This rig serves at least 6 users")
    assert any(w.code == "W_CAPACITY_LOWER_BOUND" for w in result.warnings)
    assert result.perf_points[0].users_at_slo_lower_bound is True


@pytest.mark.parametrize("server", [HYPERBOLIC], indirect=True)
def test_no_user_meets_an_slo_above_the_single_stream_rate(server, tmp_path):
    _curve, url = server
    result = capacity(url, tmp_path / "c.json", "per_user_tok_s>=500")
    assert result.answer.users == 0 and [p.concurrency for p in result.probes] == [1]
    assert result.probes[0].stopped_early
    assert result.answer.sentence.startswith(
        "This rig serves no user at ≥ 500 tok/s each: one user alone gets"
    )
    assert result.perf_points == []
    # Stopped by the SLO watch, not by a signal: no W_CUT_SHORT, in the capacity result or in
    # the probe's own bench result, and the search is complete; its cell still says it was cut.
    assert result.answer.complete and not any(w.code == "W_CUT_SHORT" for w in result.warnings)
    own = load_result(tmp_path / result.probes[0].result_file)
    assert not any(w.code == "W_CUT_SHORT" for w in own.warnings) and own.cells[0].cut_short


@pytest.mark.parametrize("server", [HYPERBOLIC], indirect=True)
def test_result_file_keeps_every_probe_the_slo_and_the_point(server, tmp_path):
    _curve, url = server
    out = tmp_path / "c.json"
    # 60 tok/s at 2, 40 at 3: a short search (1, 2, 4, 3, 2) with failed probes stopped early.
    result = capacity(url, out, "per_user_tok_s>=50")
    assert any(p.stopped_early for p in result.probes)
    loaded = load_capacity(out)
    assert loaded == result
    assert loaded.slo.text == "per_user_tok_s>=50,error_rate<=0"
    assert [c.concurrency for c in loaded.bench.cells] == [p.concurrency for p in loaded.probes]
    assert sum(len(c.requests) for c in loaded.bench.cells) == sum(
        p.requests_ok + p.requests_failed for p in loaded.probes
    )
    point = loaded.perf_points[0]
    boundary = loaded.bench.cells[loaded.answer.last_pass]
    assert point.users_at_slo == point.concurrency == loaded.answer.users
    assert point.slo == loaded.slo.text and point.claimed_by == "measured"
    assert point.per_request_decode_tok_s_median == boundary.metrics.per_request_decode_tok_s.p50
    # The term values are the bench's own cell metrics, not a second computation.
    reading = next(r for r in loaded.probes[0].readings if r.term == "per_user_tok_s")
    assert reading.value == loaded.bench.cells[0].metrics.per_request_decode_tok_s.p50
    # Each probe is a bench run of its own: its result and journal sit beside the capacity result.
    for probe, cell in zip(loaded.probes, loaded.bench.cells, strict=True):
        own = load_result(tmp_path / probe.result_file)
        assert [len(c.requests) for c in own.cells] == [len(cell.requests)]
        journal = tmp_path / probe.result_file.replace(".json", ".journal.jsonl")
        assert sum(
            '"type":"request"' in line or '"type": "request"' in line for line in journal.open()
        ) == len(cell.requests)


@pytest.mark.parametrize("server", [HYPERBOLIC], indirect=True)
def test_a_stopped_search_keeps_what_it_measured(server, tmp_path):
    """Ctrl-C (the stop event) after two probes: the file holds them; the answer is incomplete."""
    _curve, url = server
    out = tmp_path / "c.json"
    result = capacity(url, out, "per_user_tok_s>=27", stop_after=2)
    assert [p.verdict for p in result.probes] == ["pass", "pass", "stopped"]
    assert not result.answer.complete and result.answer.lower_bound
    assert result.answer.users == 2 and result.answer.sentence.startswith(
        "This rig serves at least 2 users"
    )
    assert result.bench.conditions.cut_short
    assert load_capacity(out) == result
    # The signal came between probes, where no probe's bench saw it: the search reports it.
    cut = [w.line for w in result.warnings if w.code == "W_CUT_SHORT"]
    assert cut == [
        "W_CUT_SHORT: stopped by a signal after 2 finished probe(s); the result holds what was "
        "measured and the answer is a lower bound"
    ]


# One first token in 20 takes 300 ms (seeded): the true TTFT p99 is 300 ms, past a 150 ms bound.
SPIKE = Curve(
    shape="linear", rate_tok_s=3000, falloff=0, ttft_s=0.01, spike_rate=0.05, spike_ttft_s=0.3
)


@pytest.mark.parametrize("server", [SPIKE], indirect=True)
def test_a_one_in_twenty_spike_serves_no_user(server, tmp_path):
    _curve, url = server
    result = capacity(url, tmp_path / "c.json", "ttft_p99_ms<=150")
    assert result.answer.users == 0, result.answer.sentence
    first = result.probes[0]
    # A p99 rests on 299 requests; four slow ones among them break it beyond doubt.
    assert first.requests_planned == 299 and first.binding == ["ttft_p99_ms"]
    reading = next(r for r in first.readings if r.term == "ttft_p99_ms")
    assert reading.needed == 299 and reading.requests == first.requests_ok


# 25 % slower at 6 users than at 7 to 9: a dip the doubling steps over.
DIP = Curve(shape="table", table=[120, 120, 120, 120, 120, 75, 102, 102, 102, 60])


@pytest.mark.parametrize("server", [DIP], indirect=True)
def test_a_dip_below_the_first_passes_gives_the_level_under_it(server, tmp_path):
    curve, url = server
    true = curve.users_at(min_rate=90)
    assert true == 5
    result = capacity(url, tmp_path / "c.json", "per_user_tok_s>=90")
    assert_found(result, true)
    assert result.answer.unprobed == []
    assert any(p.purpose == "check" and p.concurrency == 6 for p in result.probes)


# The first token waits 200 ms per other stream, and a stream whose client hung up holds its
# place for 1 s more (as llama-server holds a cancelled task's slot; the next probe would begin
# well inside it): 1.02 s at 6, 1.22 at 7; one such request left over from a stopped probe makes
# 6 users read as 7.
LINGER = Curve(
    shape="linear", rate_tok_s=100, falloff=0.02, ttft_s=0.02, ttft_per_user_s=0.2, linger_s=1.0
)


@pytest.mark.parametrize("server", [LINGER], indirect=True)
def test_probes_start_on_an_idle_server(server, tmp_path):
    """A probe stopped early leaves requests the server still holds; the next probe waits until
    the server's own gauge shows none (the wait is recorded), so it measures its own load."""
    curve, url = server
    true = curve.users_at(max_ttft_s=1.12)
    assert true == 6
    result = capacity(url, tmp_path / "c.json", "ttft_p50_ms<=1120")
    assert result.answer.users == true, result.answer.sentence
    after_stop = [
        p for i, p in enumerate(result.probes) if i and result.probes[i - 1].stopped_early
    ]
    # Every probe but the first waited for the gauge to show none; after a stopped one, the
    # server still held requests when the wait began.
    for p in result.probes[1:]:
        assert p.drain is not None and p.drain.idle is True
        assert p.drain.source == "/metrics vllm:num_requests_running"
    assert any(p.drain and p.drain.in_flight for p in after_stop), [p.drain for p in after_stop]


# A first token after 100 ms, inside an SLO of 200 ms; the stall limit asked for is 60 ms (as
# the profile's 60 s against an SLO's 120 s).
SLOW_FIRST = Curve(shape="linear", rate_tok_s=1000, falloff=0, ttft_s=0.1)


@pytest.mark.parametrize("server", [SLOW_FIRST], indirect=True)
def test_a_first_token_inside_the_slo_is_not_a_stall(server, tmp_path):
    _curve, url = server
    result = capacity(
        url, tmp_path / "c.json", "ttft_p50_ms<=200", max_concurrency=2, stall_timeout_s=0.06
    )
    assert result.answer.users == 2 and all(p.verdict == "pass" for p in result.probes)
    # The stall limit the probes ran with: twice the SLO's TTFT bound, recorded with the result.
    assert result.bench.conditions.profile.overrides["stall_timeout_s"] == 0.4


@pytest.mark.parametrize(
    "server", [Curve(shape="linear", rate_tok_s=100, falloff=0, ttft_s=0.6)], indirect=True
)
def test_a_warmup_that_stalls_says_so(server, tmp_path):
    """A first token slower than the stall limit (200 ms: twice the SLO's 100 ms) in every
    warmup request: E_WARMUP_STALLED, not E_ENGINE_ERROR's "fix the engine"."""
    _curve, url = server
    with pytest.raises(RigbookError) as err:
        capacity(url, tmp_path / "c.json", "ttft_p50_ms<=100", warmup=1, stall_timeout_s=0.06)
    assert err.value.code == "E_WARMUP_STALLED"
    assert "stalled" in str(err.value) and "not necessarily broken" in str(err.value)


@pytest.mark.parametrize(
    "server",
    [Curve(shape="linear", rate_tok_s=300, falloff=0, fail_above=3, linger_s=600)],
    indirect=True,
)
def test_a_server_still_busy_after_the_drain_timeout_is_said(server, tmp_path):
    """At 4 users one request is refused at once and the probe stops with the other three
    mid-stream; the server holds those for good: the next probe starts after --drain-timeout, and
    the result says it began on a busy server."""
    _curve, url = server
    result = capacity(
        url, tmp_path / "c.json", "per_user_tok_s>=50", max_concurrency=4, drain_timeout_s=0.5
    )
    busy = [p for p in result.probes if p.drain is not None and p.drain.idle is False]
    assert busy and all(p.drain.in_flight for p in busy), [
        (p.concurrency, p.verdict, p.stopped_early, p.drain) for p in result.probes
    ]
    said = [w.line for w in result.warnings if w.code == "W_CAPACITY_NOT_IDLE"]
    assert len(said) == len(busy)
    assert said[0].startswith(f"W_CAPACITY_NOT_IDLE: probe {busy[0].cell + 1} began with")
