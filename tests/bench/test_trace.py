"""Trace files (Mooncake JSONL, plain CSV/JSONL) and the replay's timing on a scripted clock."""

from __future__ import annotations

import asyncio
import json

import pytest

from rigbook.bench.workloads.trace import (
    Sent,
    lag_warning,
    parse_trace,
    percentile,
    replay,
    schedule_lag,
)
from rigbook.errors import InputError

MOONCAKE = (
    '{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 49, '
    "50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354]}\n"
    '{"timestamp": 0, "input_length": 6472, "output_length": 26, "hash_ids": [46, 47, 48, 49, '
    "50, 51, 52, 53, 54, 55, 56, 57, 2366]}\n"
    '{"timestamp": 27482, "input_length": 6955, "output_length": 104, "hash_ids": [46, 47, 48, '
    "49, 50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354]}\n"
)


def test_reads_the_mooncake_layout():
    trace = parse_trace(MOONCAKE.encode(), "m.jsonl")
    assert trace.layout == "mooncake" and trace.block_tokens == 512
    assert [r.at_s for r in trace.requests] == [0.0, 0.0, 27.482]
    assert [r.input_tokens for r in trace.requests] == [6955, 6472, 6955]
    assert [r.output_tokens for r in trace.requests] == [52, 26, 104]
    assert trace.requests[1].hash_ids[-1] == 2366 and len(trace.requests[0].hash_ids) == 14
    assert trace.span_s == pytest.approx(27.482)
    assert len(trace.sha256) == 64


def test_reads_plain_csv_and_jsonl_alike_and_sorts_by_time():
    csv_text = "at_s,input_tokens,output_tokens,hash_ids\n1.5,40,8,1 2\n0.25,30,4,\n"
    jsonl = (
        '{"at_s": 1.5, "input_tokens": 40, "output_tokens": 8, "hash_ids": [1, 2]}\n\n'
        '{"at_s": 0.25, "input_tokens": 30, "output_tokens": 4}\n'
    )
    a = parse_trace(csv_text.encode(), "t.csv", block_tokens=32)
    b = parse_trace(jsonl.encode(), "t.jsonl", block_tokens=32)
    assert a.layout == b.layout == "plain"
    strip = [(r.at_s, r.input_tokens, r.output_tokens, r.hash_ids) for r in a.requests]
    assert strip == [(r.at_s, r.input_tokens, r.output_tokens, r.hash_ids) for r in b.requests]
    assert strip == [(0.25, 30, 4, ()), (1.5, 40, 8, (1, 2))]
    # Each request keeps the line it came from: CSV rows count the header, JSONL skips blanks.
    assert [r.line for r in a.requests] == [3, 2]
    assert [r.line for r in b.requests] == [3, 1]


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (MOONCAKE + '{"timestamp": 30000, "output_length": 5}\n', 4, "input_length is missing"),
        (MOONCAKE + "not json\n", 4, "not JSON"),
        (MOONCAKE + "[1, 2]\n", 4, "not a JSON object"),
        (
            MOONCAKE + '{"timestamp": -1, "input_length": 5, "output_length": 5}\n',
            4,
            "not a time >= 0",
        ),
        (
            '{"timestamp": 1, "input_length": 5.5, "output_length": 5}\n',
            1,
            "not a whole number",
        ),
        (
            '{"timestamp": 1, "input_length": 0, "output_length": 5}\n',
            1,
            "not a whole number >= 1",
        ),
        (
            '{"timestamp": 1, "input_length": 600, "output_length": 5, "hash_ids": [1, 2, 3]}\n',
            1,
            "3 hash_ids cover more than the 600 input tokens",
        ),
        (
            '{"timestamp": 1, "input_length": 600, "output_length": 5, "hash_ids": ["a"]}\n',
            1,
            "not an integer",
        ),
        ("at_s,input_tokens,output_tokens\n0,10,5\n1,ten,5\n", 3, "input_tokens 'ten'"),
        ("at_s,input_tokens,output_tokens\n0,10,5\n\n1,10,\n", 4, "output_tokens is missing"),
    ],
)
def test_a_bad_row_is_e_trace_naming_its_line(text, line, says):
    with pytest.raises(InputError) as e:
        parse_trace(text.encode(), "t")
    assert e.value.code == "E_TRACE"
    assert e.value.message.startswith(f"t line {line}: ") and says in e.value.message


def test_an_empty_trace_is_e_trace():
    with pytest.raises(InputError) as e:
        parse_trace(b"\n\n", "empty.jsonl")
    assert e.value.code == "E_TRACE" and "no requests" in e.value.message


class ScriptedClock:
    """Time moves only when the replay waits; each wait may overshoot by a scripted amount,
    as a loaded event loop would wake late."""

    def __init__(self, late_s: list[float] | None = None) -> None:
        self.t = 100.0
        self.late = list(late_s or [])

    def now(self) -> float:
        return self.t

    async def sleep_until(self, t: float) -> None:
        late = self.late.pop(0) if self.late else 0.0
        self.t = max(self.t, t) + late
        await asyncio.sleep(0)


def _run(times, *, speed=1.0, clock, block=None):
    started: list[tuple[int, float]] = []
    release = block or asyncio.Event()
    if block is None:
        release.set()

    async def send(i: int) -> None:
        started.append((i, clock.now()))
        await release.wait()

    async def main():
        return await replay(times, send, speed=speed, clock=clock)

    return asyncio.run(main()), started


def test_replay_sends_at_planned_times_scaled_by_speed():
    clock = ScriptedClock()
    sent, started = _run([0.0, 1.0, 1.0, 4.0], speed=2.0, clock=clock)
    assert [s.planned - 100.0 for s in sent] == [0.0, 0.5, 0.5, 2.0]
    assert [s.sent - 100.0 for s in sent] == [0.0, 0.5, 0.5, 2.0]
    assert [i for i, _ in started] == [0, 1, 2, 3]
    assert all(s.lag_s == 0.0 for s in sent)


def test_replay_does_not_wait_for_earlier_requests_to_end():
    # Every send blocks until the end: a replay that waited for one before the next would hang.
    clock = ScriptedClock()

    async def main():
        release = asyncio.Event()
        starts: list[int] = []

        async def send(i: int) -> None:
            starts.append(i)
            await release.wait()

        task = asyncio.create_task(replay([0.0, 1.0, 2.0], send, clock=clock))
        while len(starts) < 3:
            await asyncio.sleep(0)
        assert not task.done()
        release.set()
        return await task

    assert len(asyncio.run(main())) == 3


def test_lag_is_measured_per_request_and_a_late_wake_does_not_shift_the_plan():
    # The second wait wakes 30 ms late: that request lags 30 ms, but the third is planned from
    # the replay's start, not from the late one, so it is on time again.
    clock = ScriptedClock(late_s=[0.0, 0.030, 0.0])
    sent, _ = _run([0.0, 1.0, 2.0], clock=clock)
    assert [round(s.lag_s * 1000, 6) for s in sent] == [0.0, 30.0, 0.0]
    assert sent[2].sent - sent[0].sent == pytest.approx(2.0)


def test_requests_behind_schedule_go_out_at_once_and_carry_their_lag():
    # One wake 2.5 s late: the requests planned at 1 and 2 s are both overdue and go at once.
    clock = ScriptedClock(late_s=[0.0, 2.5])
    sent, _ = _run([0.0, 1.0, 2.0, 5.0], clock=clock)
    assert [round(s.lag_s, 6) for s in sent] == [0.0, 2.5, 1.5, 0.0]


def test_stop_ends_the_replay_and_cancels_sends_in_flight():
    clock = ScriptedClock()

    async def main():
        stop = asyncio.Event()
        cancelled: list[int] = []

        async def send(i: int) -> None:
            if i == 1:
                stop.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(i)
                raise

        sent = await replay([0.0, 1.0, 2.0, 3.0], send, clock=clock, stop=stop)
        return sent, cancelled

    sent, cancelled = asyncio.run(main())
    assert [s.index for s in sent] == [0, 1]
    assert sorted(cancelled) == [0, 1]


def test_schedule_lag_states_p50_p99_and_flags_past_the_limit():
    sent = [Sent(index=i, planned=float(i), sent=float(i) + i / 1000.0) for i in range(101)]
    lag = schedule_lag(sent, limit_ms=50.0, speed=1.0)
    assert lag is not None
    assert lag.requests == 101 and lag.p50_ms == pytest.approx(50.0)
    assert lag.p99_ms == pytest.approx(99.0) and lag.max_ms == pytest.approx(100.0)
    assert lag.late
    warning = lag_warning(lag, 0)
    assert warning is not None and warning.line.startswith("W_TRACE_LAG: cell 0:")
    calm = schedule_lag(sent, limit_ms=100.0, speed=1.0)
    assert calm is not None and not calm.late and lag_warning(calm, 0) is None
    assert schedule_lag([], limit_ms=1.0, speed=1.0) is None


def test_percentile_interpolates():
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([0.0, 10.0], 0.99) == pytest.approx(9.9)
    assert json.dumps(percentile([5.0], 0.99)) == "5.0"


def test_the_terminal_line_states_lag_and_exact_prompts():
    from types import SimpleNamespace

    from rigbook.bench.workloads.trace import TraceReplay, replay_lines

    sent = [Sent(index=i, planned=float(i), sent=float(i) + 0.002 * i) for i in range(3)]
    replay = TraceReplay(
        source="t.jsonl",
        sha256="0" * 64,
        layout="plain",
        block_tokens=512,
        speed=2.0,
        requests_planned=4,
        requests_sent=3,
        lag=schedule_lag(sent, limit_ms=50.0, speed=2.0),
        prompt_tokens_exact=2,
        prompt_tokens_counted=3,
        chat_template_tokens=0,
    )
    cells = [SimpleNamespace(index=0, trace=None), SimpleNamespace(index=1, trace=replay)]
    assert replay_lines(cells) == [
        "cell 1: 3 of 4 requests at speed 2; lag p50 2.00 ms, p99 3.96 ms, max 4.00 ms "
        "(limit 50 ms); 2 of 3 prompts at the trace's exact length"
    ]
