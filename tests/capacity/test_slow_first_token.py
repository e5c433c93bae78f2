"""A 65 s first token inside a 120 s TTFT bound, on a scripted clock (no real 65 s wait).

Each request goes through the Python client's own stream parser (its stall check included) with
its clock scripted, then through the bench's record and cell, then the search and its answer: the
same path a live capacity run takes, bar the socket.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from rigbook.bench import MeasureRequest
from rigbook.bench import client as client_mod
from rigbook.bench.metrics import build_cell, to_record
from rigbook.bench.profiles import get_profile
from rigbook.bench.result import CellTelemetry
from rigbook.capacity.run import stall_for
from rigbook.capacity.search import ProbePlan, SearchSettings, search
from rigbook.capacity.slo import parse_slo
from rigbook.openai.stream import RawRequest
from tests.capacity.test_search import answer

SLO = "ttft_p50_ms<=120000"
TOKENS = 20


class _Transport:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def _event(delta: dict, finish: str | None = None) -> bytes:
    data = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


async def _one_request(ttft_s: float, stall_s: float, clock: list[float]) -> RawRequest:
    """One stream whose first byte comes ``ttft_s`` after the request, read by the client's
    parser while ``clock[0]`` (its perf_counter) is moved by the script; the stall check runs at
    every whole minute of the wait, as its timer would."""
    loop = asyncio.get_running_loop()
    raw = RawRequest(sent=clock[0])
    stream = client_mod._Stream(raw, b"", loop.create_future(), stall_s, None)
    start = clock[0]
    stream.connection_made(_Transport())  # type: ignore[arg-type]
    minute = 60.0
    while minute < ttft_s and not stream.finished.done():
        clock[0] = start + minute
        stream._check_stall()
        minute += 60.0
    if stream.finished.done():
        return raw
    clock[0] = start + ttft_s
    stream.data_received(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        + _event({"content": "x"})
    )
    for _ in range(TOKENS - 1):
        clock[0] += 0.05
        stream.data_received(_event({"content": "x"}))
    clock[0] += 0.05
    stream.data_received(_event({}, "stop") + b"data: [DONE]\n\n")
    stream.connection_lost(None)
    return raw


class _SlowFirstToken:
    """A probe whose first token takes 65 s up to two users and 130 s beyond (past the bound,
    short of the stall limit: a TTFT miss with its value, not a failed request)."""

    def __init__(self, stall_s: float, clock: list[float]) -> None:
        self.stall_s, self.clock, self.cells = stall_s, clock, 0

    async def __call__(self, plan: ProbePlan, watch):
        ttft = 65.0 if plan.concurrency <= 2 else 130.0
        t0 = self.clock[0]
        records = []
        for i in range(plan.requests):
            raw = await _one_request(ttft, self.stall_s, self.clock)
            records.append(
                to_record(
                    raw,
                    cell=self.cells,
                    index=i,
                    prompt_index=0,
                    t0=t0,
                    max_tokens=TOKENS,
                    hold_length=False,
                )
            )
            watch(records)
        cell = build_cell(
            index=self.cells,
            mode="burst",
            concurrency=plan.concurrency,
            records=records,
            requests_planned=plan.requests,
            duration_s=None,
            window=None,
            telemetry=CellTelemetry(available=False),
            client=None,
            cut_short=False,
        )
        self.cells += 1
        return cell


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(client_mod, "_perf", lambda: now[0])
    return now


def _search(stall_s: float, clock: list[float]):
    settings = SearchSettings(max_concurrency=4, reruns=0)
    probe = _SlowFirstToken(stall_s, clock)
    outcomes = asyncio.run(search(probe, parse_slo(SLO), settings))
    return outcomes, answer(outcomes, SLO, max_concurrency=4, reruns=0)


def test_the_stall_limit_follows_the_slo():
    measure = MeasureRequest(url="http://127.0.0.1:1")
    assert get_profile(measure.profile).stall_timeout_s == 60.0
    assert stall_for(parse_slo(SLO), measure) == 240.0
    # A limit asked for above twice the bound is kept.
    asked = measure.model_copy(update={"stall_timeout_s": 300.0})
    assert stall_for(parse_slo(SLO), asked) == 300.0


def test_a_65_s_first_token_inside_a_120_s_slo_passes(clock):
    stall = stall_for(parse_slo(SLO), MeasureRequest(url="http://127.0.0.1:1"))
    outcomes, found = _search(stall, clock)
    assert found.users == 2 and not found.lower_bound, found.sentence
    assert found.binding == "ttft_p50_ms"
    passed = [o for o in outcomes if o.concurrency <= 2]
    assert passed and all(o.verdict == "pass" and o.requests_failed == 0 for o in passed)
    reading = next(r for r in passed[0].readings if r.term == "ttft_p50_ms")
    assert reading.value == pytest.approx(65000.0)
    # Beyond two users the first token misses the bound by its value, not by a stall.
    failed = next(o for o in outcomes if o.verdict == "fail")
    assert failed.binding == ["ttft_p50_ms"] and failed.requests_failed == 0


def test_the_profiles_60_s_limit_alone_would_fail_it(clock):
    """What capacity did before its stall limit followed the SLO: every 65 s first token a
    failed request, and no user served (binding: error rate)."""
    outcomes, found = _search(60.0, clock)
    assert found.users == 0 and [o.concurrency for o in outcomes] == [1]
    assert "error_rate" in outcomes[0].binding and outcomes[0].requests_failed >= 1
