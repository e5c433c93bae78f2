"""A request's and a cell's timing figures on a scripted clock: the identities the live tests
once checked within 1 % of the synthetic server (that accuracy is `make bench-truth`'s figure).

Each stream is folded as the client folds it (``apply_event``) with the times a clock would have
read, so the figures are exact and no machine's load can move them."""

from __future__ import annotations

import pytest

from rigbook.bench.metrics import build_cell, to_record
from rigbook.bench.result import CellTelemetry, RequestRecord
from rigbook.openai.stream import RawRequest, apply_event


def _stream(
    sent: float, first: float, gap: float, chunks: list[int], *, usage: str = "continuous"
) -> RawRequest:
    """A reply of ``chunks`` (tokens each), its first at ``first``, then one every ``gap`` s;
    usage with every event (``continuous``), once at the end (``final``) or never (``none``)."""
    raw = RawRequest(sent=sent)
    count = 0
    for k, n in enumerate(chunks):
        count += n
        event: dict = {"choices": [{"delta": {"content": "tok " * n}}]}
        if usage == "continuous":
            event["usage"] = {"prompt_tokens": 5, "completion_tokens": count}
        apply_event(raw, event, first + k * gap)
    end = first + (len(chunks) - 1) * gap
    finish: dict = {"choices": [{"delta": {}, "finish_reason": "length"}]}
    if usage == "final":
        finish["usage"] = {"prompt_tokens": 5, "completion_tokens": count}
    apply_event(raw, finish, end)
    raw.done = end
    return raw


def _record(raw: RawRequest, index: int = 0, t0: float = 0.0, **kw) -> RequestRecord:
    tokens = kw.pop("max_tokens", None)
    return to_record(
        raw,
        cell=0,
        index=index,
        prompt_index=0,
        t0=t0,
        max_tokens=tokens if tokens is not None else 10**6,
        hold_length=False,
        **kw,
    )


def _cell(records: list[RequestRecord], window: tuple[float, float] | None = None):
    return build_cell(
        index=0,
        mode="sustained" if window else "burst",
        concurrency=len(records),
        records=records,
        requests_planned=None if window else len(records),
        duration_s=(window[1] - window[0]) if window else None,
        window=window,
        telemetry=CellTelemetry(available=False),
        client=None,
        cut_short=False,
    )


# The synthetic server's shape: the first token alone, then three an event.
SHAPE = [1] + [3] * 53  # 160 tokens


def test_a_requests_rate_is_its_tokens_after_the_first_chunk_over_first_to_last():
    record = _record(_stream(10.0, 10.03, 0.0075, SHAPE), t0=10.0)
    assert record.output_tokens == 160 and record.first_chunk_tokens == 1 and record.chunks == 54
    # 159 tokens after the first, 53 gaps of 7.5 ms: 400 tok/s exactly.
    assert record.first_token_s == pytest.approx(0.03)
    assert record.last_token_s == pytest.approx(0.03 + 53 * 0.0075)
    assert record.decode_tok_s == pytest.approx(159 / (53 * 0.0075))
    assert record.itl_ms_mean == pytest.approx(1000 * 53 * 0.0075 / 159)


def test_with_usage_only_at_the_end_every_token_counts_and_the_first_chunk_is_left_out():
    """Before, the total spread over every chunk read 2 % low."""
    chunks = [1] + [3] * 29 + [2]  # 90 tokens in 31 events
    record = _record(_stream(0.0, 0.03, 0.0075, chunks, usage="final"))
    assert record.token_source == "server_final" and record.output_tokens == 90
    assert record.chunks == 31
    # The first event's one token is left out: 89 tokens over 30 gaps of 7.5 ms.
    assert record.first_chunk_tokens == 1
    assert record.decode_tok_s == pytest.approx(89 / (30 * 0.0075))


def test_without_usage_each_event_counts_one_token():
    """No usage: 31 events are 31 tokens, said so, never max_tokens."""
    record = _record(_stream(0.0, 0.03, 0.0075, [1] + [3] * 29 + [2], usage="none"))
    assert record.token_source == "client_fallback" and record.output_tokens == 31
    assert record.decode_tok_s == pytest.approx(30 / (30 * 0.0075))


def test_a_burst_cells_aggregate_spans_first_send_to_last_token():
    # Four streams sent 1 ms apart, each 160 tokens; the last ends latest.
    records = [
        _record(_stream(0.001 * i, 0.03 + 0.001 * i, 0.0075 + 0.001 * i, SHAPE), index=i)
        for i in range(4)
    ]
    cell = _cell(records)
    last = 0.033 + 53 * 0.0105
    assert cell.metrics.aggregate_tok_s == pytest.approx(640 / last)
    assert cell.metrics.ttft_ms.p50 == pytest.approx(30.0)
    rates = sorted(159 / (53 * (0.0075 + 0.001 * i)) for i in range(4))
    assert cell.metrics.per_request_decode_tok_s.p50 == pytest.approx((rates[1] + rates[2]) / 2)
    assert cell.metrics.concurrency_reached == 4 and cell.metrics.requests_ok == 4


def test_a_sustained_cell_counts_only_the_tokens_inside_its_window():
    # One token an event every 10 ms from 30 ms: 71 of them fall in [0, 0.735].
    raw = _stream(0.0, 0.03, 0.01, [1] * 200)
    raw.cancelled = True  # the window's end cut it
    window = (0.0, 0.735)
    record = _record(raw, window=window)
    assert record.cut_at_window and record.window_tokens == 71
    cell = _cell([record], window)
    assert cell.metrics.tokens_in_window == 71
    assert cell.metrics.aggregate_tok_s == pytest.approx(71 / 0.735)
