"""Flags bound each figure: a client-bound judgement says, per figure of a cell, how far the
client's measured lag could have moved it, keeps the figures within 1 % and marks the others.

The judgement itself is scripted (a ClientLoad with set lags, records with set times); the
compiled reader's own measure of the read that decides a TTFT runs against a scripted server."""

from __future__ import annotations

import asyncio
import json

import pytest

from rigbook.bench import compiled
from rigbook.bench.assemble import perf_point
from rigbook.bench.client import Target
from rigbook.bench.metrics import distribution, to_record
from rigbook.bench.result import ClientLoad, RequestRecord
from rigbook.bench.scheduler import TOLERANCE, UNBOUNDED, judge_client, warned
from rigbook.openai.stream import RawRequest
from tests.bench.helpers import bench, follows_from_records, recorded, streamed, synthetic_server
from tests.conftest import scripted_server

SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"


def event(data: dict) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def token(text: str = "x") -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": text}}]})


ROLE = event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
END = event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) + b"data: [DONE]\n\n"


def one_lane(requests: int, tokens: int, gap_s: float) -> list[RequestRecord]:
    """``requests`` replies of ``tokens`` events ``gap_s`` apart, one after another on one lane
    (TTFT 30 ms each)."""
    each = 0.05 + tokens * gap_s
    return [
        to_record(
            streamed(tokens, gap_s=gap_s),
            cell=0,
            index=k,
            prompt_index=0,
            t0=-k * each,
            max_tokens=tokens,
            hold_length=True,
        )
        for k in range(requests)
    ]


def kernel(
    first_ms: float, merged_ms: float, turnover_ms: float, last_ms: float | None = None
) -> ClientLoad:
    """A compiled client's load; the last token's read as wide as any merged one unless set."""
    return ClientLoad(
        loop_lag_ms=distribution([0.1]),
        timestamps="kernel",
        first_read_worst_ms=first_ms,
        merged_read_worst_ms=merged_ms,
        last_read_worst_ms=merged_ms if last_ms is None else last_ms,
        end_late_worst_ms=0.1,
        next_request_late_worst_ms=turnover_ms,
        cpu_s=0.1,
        wall_s=1.0,
        cpu_fraction=0.1,
        client_bound=False,
    )


def test_a_good_cell_keeps_its_rates():
    """Mid-stream merged reads of 12 ms and a turnover 0.02 ms over the old 10 ms limit (half the
    20 ms gap): the old judge flagged the whole cell, though neither can move a 4 s reply's rate
    or an 8 s window's aggregate by 1 %. Only the per-token gaps they can move are marked."""
    judged = judge_client(kernel(0.0, 12.0, 10.02), one_lane(2, 200, 0.02))
    assert judged.moved is not None
    assert judged.moved.aggregate_tok_s is not None and judged.moved.aggregate_tok_s < TOLERANCE
    assert judged.moved.per_request_decode_tok_s is not None
    assert judged.moved.per_request_decode_tok_s < TOLERANCE
    assert judged.moved.ttft_ms == 0.0
    assert judged.marked == ["itl_ms_worst_p99"]
    assert not judged.client_bound
    assert "itl_ms_worst_p99" in (judged.reason or "")


def test_a_wide_merge_mid_stream_moves_no_rate():
    """llama-server writes two tokens at once where one ends inside a UTF-8 character: the
    reader, waiting in epoll_wait since the previous token, measures the pair's read about as
    wide as the gap. It can move the per-token gaps, not a rate, which ends on the last token
    (read alone here): the embedded server's cells lost their rates to it."""
    judged = judge_client(kernel(0.0, 190.0, 5.0, last_ms=0.0), one_lane(2, 48, 0.14))
    assert not judged.client_bound, judged.reason
    assert judged.marked == ["itl_ms_worst_p99"]
    # the same merge on a stream's last token does move its rate
    assert judge_client(kernel(0.0, 190.0, 5.0), one_lane(2, 48, 0.14)).client_bound


def test_a_ttft_moved_past_the_tolerance_is_marked_and_the_rates_stand():
    """A first read 5 ms wide against a 30 ms TTFT: the TTFT is marked, the rates are kept."""
    judged = judge_client(kernel(5.0, 0.5, 0.5), one_lane(2, 200, 0.02))
    assert judged.moved is not None and judged.moved.ttft_ms == pytest.approx(5.0 / 30.0, rel=0.01)
    assert "ttft_ms" in judged.marked and not judged.client_bound
    assert "ttft_ms by up to 16.7%" in (judged.reason or "")


@pytest.mark.parametrize(
    ("merged", "turnover", "requests", "bound"),
    [
        (2.0, 1.0, 1, False),  # 2 ms on a 0.4 s reply: 0.5 %
        (15.0, 1.0, 1, True),  # 15 ms: 3.8 % of the reply's rate
        (2.0, 15.0, 1, False),  # a lone request has no next one to send late
        (2.0, 15.0, 3, True),  # two turnovers of 15 ms on a 1.3 s window: 2.4 %
    ],
)
def test_the_rates_are_bound_by_merged_reads_and_turnovers(merged, turnover, requests, bound):
    judged = judge_client(kernel(0.0, merged, turnover), one_lane(requests, 20, 0.02))
    assert judged.client_bound is bound, judged.reason
    assert (judged.reason is not None) is bool(judged.marked)


def test_the_python_clients_stall_bounds_every_stamp():
    """Stamped as read, every stamp is up to the longest stall late: a 30 ms stall (over the old
    25 ms limit of a 50 ms gap) cannot move a 10 s reply's rate by 1 %, but it can a 30 ms TTFT."""
    load = ClientLoad(
        loop_lag_ms=distribution([1.0, 29.0]),
        loop_lag_worst_ms=29.0,
        stall_worst_bound_ms=30.0,
        worst_stall_cpu_ms=1.0,
        cpu_s=0.1,
        wall_s=10.0,
        cpu_fraction=0.01,
        client_bound=False,
    )
    judged = judge_client(load, one_lane(1, 200, 0.05))
    assert not judged.client_bound, judged.reason
    assert judged.marked == ["ttft_ms", "itl_ms_worst_p99"]
    assert "stalled up to 30.0 ms" in (judged.reason or "")
    short = judge_client(load, one_lane(1, 20, 0.05))  # a 1 s reply: 3 %
    assert short.client_bound and "per_request_decode_tok_s" in short.marked


def test_a_stall_longer_than_the_reply_marks_its_rates_and_the_result_still_writes():
    """A 50 ms stall against replies of 8 ms between first and last token: the rate could be
    anything. Before, its bound was infinite, which JSON cannot hold: the run (a capacity probe on
    a loaded machine) ended in E_INTERNAL "Out of range float values are not JSON compliant"."""
    load = ClientLoad(
        loop_lag_ms=distribution([1.0, 49.0]),
        loop_lag_worst_ms=49.0,
        stall_worst_bound_ms=50.0,
        worst_stall_cpu_ms=1.0,
        cpu_s=0.1,
        wall_s=1.0,
        cpu_fraction=0.1,
        client_bound=False,
    )
    judged = judge_client(load, one_lane(3, 5, 0.002))
    assert judged.client_bound and "per_request_decode_tok_s" in judged.marked
    assert judged.moved is not None and judged.moved.per_request_decode_tok_s == UNBOUNDED
    assert "per_request_decode_tok_s without bound" in (judged.reason or "")
    assert ClientLoad.model_validate_json(judged.model_dump_json()) == judged


def test_reads_without_stamps_mark_every_figure():
    load = kernel(0.0, 0.0, 0.0).model_copy(update={"unstamped_reads": 3})
    judged = judge_client(load, one_lane(1, 20, 0.02))
    assert judged.client_bound
    assert set(judged.marked) == {
        "aggregate_tok_s",
        "per_request_decode_tok_s",
        "ttft_ms",
        "itl_ms_worst_p99",
    }


def test_a_marked_ttft_is_left_out_of_the_perf_point_and_the_rates_kept(tmp_path):
    with synthetic_server("--rate 200 --tokens-per-chunk 1 --falloff 0") as url:
        result = bench(url, tmp_path / "r.json", concurrency=[1], requests=1, max_tokens=10)
    cell = result.cells[0]
    assert cell.client is not None
    held = perf_point(
        cell.model_copy(update={"client": cell.client.model_copy(update={"marked": []})}),
        result.conditions,
        {},
    )
    marked = perf_point(
        cell.model_copy(update={"client": cell.client.model_copy(update={"marked": ["ttft_ms"]})}),
        result.conditions,
        {},
    )
    assert held.ttft_ms is not None and held.prefill_tok_s is not None
    assert marked.ttft_ms is None and marked.prefill_tok_s is None
    assert "TTFT left out" in (marked.notes or "")
    assert marked.decode_tok_s == held.decode_tok_s
    assert marked.per_request_decode_tok_s_median == held.per_request_decode_tok_s_median


needs_reader = pytest.mark.skipif(not compiled.available(), reason="the reader was not built")


def _read(pieces: list[bytes], pause_s: float) -> tuple[ClientLoad, RawRequest]:
    async def run() -> tuple[ClientLoad, RawRequest]:
        server, url = await scripted_server(pieces, pause_s=pause_s)
        async with server:
            client = compiled.CompiledClient(Target(url), 10.0)
            client.start()
            raw = RawRequest()
            await client.send(b"{}", raw)
            load = await client.stop()
            client.close()
        return load, raw

    return asyncio.run(run())


@needs_reader
def test_a_late_first_read_bounds_the_ttft_it_moved(monkeypatch):
    """The reader, held to a 250 ms pace, reads the reply's head at once, then the role event
    and the first token (written 40 ms later) together with the second (80 ms): the first carries
    the second's stamp, a TTFT 40 ms long. The read that brings the first token is measured
    apart, its window is at least the error, and the judgement marks the TTFT. Before, the read
    that brought a stream's first events was left out of the merged-read check: no figure said
    it, and the cell was valid with its TTFT twice the truth."""
    monkeypatch.setattr(compiled, "PACE_MIN_S", 0.25)
    monkeypatch.setattr(compiled, "PACE_MAX_S", 0.25)
    load, raw = _read([SSE, ROLE + token("a"), token("b"), *[b""] * 6, END], pause_s=0.04)
    assert raw.error is None and len(raw.times) == 2
    moved_ms = 1000.0 * (raw.times[0] - raw.sent) - 40.0
    assert moved_ms >= 30.0  # a merged read stamped it with the second token's arrival
    assert load.first_read_worst_ms is not None and load.first_read_worst_ms >= moved_ms
    assert load.merged_read_worst_ms is not None and load.merged_read_worst_ms < 20.0
    record = to_record(
        raw, cell=0, index=0, prompt_index=0, t0=0.0, max_tokens=2, hold_length=False
    )
    judged = judge_client(load, [record])
    assert "ttft_ms" in judged.marked


@needs_reader
def test_two_tokens_written_at_once_mid_stream_are_kept_from_the_rates():
    """A server that writes two tokens in one write mid-stream, 100 ms after the one before: the
    reader (waiting in epoll_wait) reads them together, a merged read 100 ms wide, but the last
    token came alone, so nothing bounds a rate but its own read."""
    pieces = [SSE + ROLE, token("a"), token("b") + token("c"), token("d"), END]
    load, raw = _read(pieces, pause_s=0.1)
    assert raw.error is None and len(raw.times) == 4
    assert load.merged_read_worst_ms is not None and load.merged_read_worst_ms >= 50.0
    # A read that held a later event would be a pause (100 ms) wide: half of it tells them apart
    # with room for a loaded machine's scheduling.
    assert load.last_read_worst_ms is not None and load.last_read_worst_ms < 50.0
    assert load.first_read_worst_ms is not None and load.first_read_worst_ms < 50.0


@needs_reader
def test_a_token_after_the_role_in_one_read_moves_no_ttft():
    """llama-server writes the role event and the first token together: the token is the read's
    last event, so it carries its own stamp and the read is no merged read."""
    load, _ = _read([SSE, ROLE + token("a"), token("b"), END], pause_s=0.2)
    # A merged read here would be a pause (200 ms) wide: half of it tells them apart.
    assert load.first_read_worst_ms is not None and load.first_read_worst_ms < 100.0
    assert load.merged_read_worst_ms is not None and load.merged_read_worst_ms < 100.0


def test_only_a_published_figure_is_warned_of():
    """Marked per-token gaps stay in the cell; a marked TTFT or rate gives W_CLIENT_BOUND."""
    gaps = judge_client(kernel(0.0, 12.0, 0.0), one_lane(2, 200, 0.02))
    ttft = judge_client(kernel(5.0, 0.0, 0.0), one_lane(2, 200, 0.02))
    assert gaps.marked == ["itl_ms_worst_p99"] and not warned(gaps)
    assert "ttft_ms" in ttft.marked and warned(ttft)


@pytest.mark.parametrize("kind", ["python", "compiled"] if compiled.available() else ["python"])
def test_one_stream_on_the_ground_truth_server_counts_every_token(kind, tmp_path):
    """One stream of five seconds against the synthetic server, whose own record is the truth:
    the client measured every token the server sent, and a rate it marked (a lag would have to
    reach 1 % of the reply, 50 ms, to mark one) is not published. Whether an idle machine
    marks none: `make bench-truth`."""
    with synthetic_server("--rate 100 --tokens-per-chunk 1 --falloff 0 --ttft-s 0.05") as url:
        result = bench(
            url,
            tmp_path / "r.json",
            concurrency=[1],
            requests=1,
            max_tokens=500,
            warmup=0,
            client=kind,
        )
        [served] = [r for r in recorded(url) if r["tokens"] == 500]
    cell = result.cells[0]
    assert cell.valid and cell.client is not None, cell.invalid_reasons
    [record] = cell.requests
    assert record.output_tokens == served["tokens"] and record.chunks == served["chunks"]
    follows_from_records(cell)
    assert [p.concurrency for p in result.perf_points] == ([] if cell.client_bound else [1])
