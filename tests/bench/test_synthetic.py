"""The bench client against the synthetic server: every token it sent is counted, the figures
follow from the records, failures invalidate cells."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rigbook.bench.result import load_result, verify_hash
from rigbook_testkit.synthetic_server import _events
from tests.bench.helpers import (
    bench,
    follows_from_records,
    recorded,
    served_as_recorded,
    synthetic_server,
)


@pytest.fixture(scope="module")
def server_proc():
    with synthetic_server("--rate 400 --falloff 0.25 --tokens-per-chunk 3 --stall-s 2") as url:
        yield url


@pytest.fixture
def server(server_proc):
    # A stalled stream of an earlier test would still slow this one's: wait for the server to be idle.
    deadline = time.monotonic() + 10
    while httpx.get(server_proc + "/_record").json()["active"] and time.monotonic() < deadline:
        time.sleep(0.1)
    httpx.post(server_proc + "/_reset")
    return None, server_proc


def test_every_token_the_server_sent_is_counted_and_the_figures_follow(server, tmp_path):
    """Each request carried the tokens and events the server recorded, and every figure is what
    the client's own records give; a figure the client marked as moved by its own lag is never
    published. How close the figures are to the server's own is `make bench-truth`'s measure."""
    _s, url = server
    result = bench(url, tmp_path / "r.json", concurrency=[1, 4], requests=4, max_tokens=160)
    served = recorded(url)
    assert len(served) == 8
    for cell, own in zip(result.cells, (served[:4], served[4:]), strict=True):
        assert cell.valid and cell.token_count_source == "server_continuous"
        served_as_recorded(cell, own)
        follows_from_records(cell)
        # The first token comes alone, as an engine sends it; three a chunk after it.
        assert all(r.output_tokens == 160 and r.first_chunk_tokens == 1 for r in cell.requests)
    _one, four = result.cells
    assert four.metrics.concurrency_reached == 4
    # Perf points: decode_tok_s is the aggregate, per-request median beside it, conditions filled.
    # A cell a loaded machine stalled is flagged client_bound and publishes none; its point is built
    # here the same way to check the shape.
    from rigbook.bench.assemble import perf_point

    assert [p.concurrency for p in result.perf_points] == [
        c.concurrency for c in result.cells if not c.client_bound
    ]
    _p1, p4 = (perf_point(c, result.conditions, {}) for c in result.cells)
    assert p4.concurrency == 4 and p4.decode_tok_s == four.metrics.aggregate_tok_s
    assert p4.per_request_decode_tok_s_median == four.metrics.per_request_decode_tok_s.p50
    assert p4.claimed_by == "measured" and p4.conditions.reply_tokens == 160
    assert (
        p4.conditions.token_count_source == "server_continuous"
        and p4.conditions.sampling.temperature == 0
    )
    loaded = load_result(tmp_path / "r.json")
    assert verify_hash(loaded) and loaded == result


def test_a_reply_without_usage_counts_its_chunks_never_max_tokens(server, tmp_path):
    """The first token alone, then three a chunk, and no usage: the client sees 31 chunks, counts
    31 and says so, and a held reply is short for want of usage. Before, the "length" finish was
    taken for max_tokens, which a server that stops below it (a context cap) made read fast."""
    _s, url = server
    result = bench(
        url,
        tmp_path / "r.json",
        model="synthetic-nousage",
        concurrency=[1],
        requests=1,
        max_tokens=90,
    )
    [record] = result.cells[0].requests
    assert record.output_tokens == 31 and record.chunks == 31
    assert record.token_source == "client_fallback" and "no usage" in (record.error or "")


def test_token_source_is_recorded(server, tmp_path):
    _s, url = server
    result = bench(
        url,
        tmp_path / "r.json",
        model="synthetic-final",
        concurrency=[2],
        requests=2,
        max_tokens=90,
    )
    cell = result.cells[0]
    assert cell.valid and cell.token_count_source == "server_final"
    # The first token alone, then three a chunk: with the final usage every token counts, and the
    # rate is the tokens after the first one's (before, the total spread over every chunk read
    # 2 % low).
    assert all(r.output_tokens == 90 and r.chunks == 31 for r in cell.requests)
    served_as_recorded(cell, recorded(url))
    follows_from_records(cell)


def test_reasoning_tokens_separate_ttft_from_first_content(server, tmp_path):
    _s, url = server
    result = bench(
        url,
        tmp_path / "r.json",
        model="synthetic-reasoning",
        concurrency=[1],
        requests=1,
        max_tokens=60,
    )
    cell = result.cells[0]
    rec = cell.requests[0]
    assert cell.valid and rec.reasoning_tokens == 24
    # Content starts after the 24 reasoning tokens: the first content token comes later than the
    # first token, and the cell's time to it is that request's.
    assert rec.first_token_s is not None and rec.first_content_s is not None
    assert rec.first_content_s > rec.first_token_s
    assert cell.metrics.ttfct_ms.p50 == pytest.approx(1000.0 * (rec.first_content_s - rec.sent_s))


@pytest.mark.parametrize(
    "model, reason",
    [
        ("synthetic-error", "in_band_error"),
        ("synthetic-early-eos", "short"),
        ("synthetic-stall", "stalled"),
        ("synthetic-drop", "dropped"),
    ],
)
def test_each_failure_marks_the_cell_invalid(server, tmp_path, model, reason):
    _s, url = server
    result = bench(
        url,
        tmp_path / "r.json",
        model=model,
        concurrency=[1],
        requests=3,
        max_tokens=60,
        stall_timeout_s=0.5,
    )
    cell = result.cells[0]
    assert not cell.valid
    assert cell.metrics.requests_failed == 1 and cell.metrics.requests_ok == 2
    assert any(reason in r for r in cell.invalid_reasons), cell.invalid_reasons
    assert result.perf_points == []  # never averaged into perf points


def test_sustained_counts_only_tokens_inside_the_window(server, tmp_path):
    _s, url = server
    result = bench(url, tmp_path / "r.json", concurrency=[2], duration_s=1.0, max_tokens=200)
    cell = result.cells[0]
    assert cell.mode == "sustained" and cell.valid
    assert any(r.cut_at_window for r in cell.requests)
    # Only tokens inside the window count: never more than a request received.
    assert all(r.window_tokens is not None for r in cell.requests)
    assert all(r.window_tokens <= r.output_tokens for r in cell.requests)
    assert cell.metrics.tokens_in_window == round(sum(r.window_tokens for r in cell.requests))
    follows_from_records(cell)


def test_a_window_shorter_than_one_reply_still_measures(server, tmp_path):
    """400 tokens at 320 tok/s take 1.25 s; a 0.4 s window cuts every stream, and that is no failure."""
    _s, url = server
    result = bench(url, tmp_path / "r.json", concurrency=[2], duration_s=0.4, max_tokens=400)
    cell = result.cells[0]
    assert cell.valid, cell.invalid_reasons
    assert cell.requests and all(r.cut_at_window for r in cell.requests)
    assert cell.metrics.requests_ok == 2 and cell.metrics.requests_failed == 0
    # The server stopped sending when the client hung up: neither side finished a reply, and the
    # client counted no token the server did not send.
    own = recorded(url)
    assert len(own) == 2 and not any(s["completed"] for s in own)
    assert sum(r.output_tokens for r in cell.requests) <= sum(s["tokens"] for s in own)
    follows_from_records(cell)
    assert [p.concurrency for p in result.perf_points] == ([] if cell.client_bound else [2])


# What GuideLLM 0.8.1 sends (captured through a logging proxy): the prompt as content parts and the
# length as max_completion_tokens. The server used to raise on the parts and close the connection
# with no response, which httpx reports as "Server disconnected without sending a response".
GUIDELLM_BODY = {
    "model": "synthetic",
    "stream": True,
    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    "max_completion_tokens": 20,
    "ignore_eos": True,
    "messages": [{"role": "user", "content": [{"type": "text", "text": "one two three"}]}],
}


def test_a_request_with_content_parts_and_max_completion_tokens_is_served(server):
    _s, url = server
    with httpx.stream("POST", url + "/v1/chat/completions", json=GUIDELLM_BODY) as reply:
        assert reply.status_code == 200
        events = [ln for ln in reply.iter_lines() if ln.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    [served] = recorded(url)
    assert served["completed"] and served["tokens"] == 20 and served["prompt_tokens"] == 3


def test_a_request_it_cannot_read_is_answered_400_not_dropped(server):
    _s, url = server
    reply = httpx.post(url + "/v1/chat/completions", content=b"{not json")
    assert reply.status_code == 400 and "error" in reply.json()
    assert recorded(url) == []


def test_sent_counts_the_tokens_and_the_writes_that_carried_them(server):
    _s, url = server
    before = httpx.get(url + "/_sent").json()
    body = {"model": "synthetic", "stream": True, "max_tokens": 30, "messages": []}
    assert httpx.post(url + "/v1/chat/completions", json=body).status_code == 200
    after = httpx.get(url + "/_sent").json()
    assert after["tokens"] - before["tokens"] == 30
    # The first token alone, then three an event: eleven events; events that fall due together
    # share one write.
    assert 1 <= after["writes"] - before["writes"] <= 11


def test_a_client_that_hangs_up_frees_its_stream_at_once():
    """An engine aborts a request whose client closed; the server must not count it until a
    write fails (the next cell would find its slot taken), nor twice when it ends on its own."""
    body = {"model": "synthetic", "stream": True, "max_tokens": 4000, "messages": []}
    with synthetic_server("--rate 400 --ttft-s 1") as url, httpx.Client(timeout=30) as http:
        with http.stream("POST", url + "/v1/chat/completions", json=body) as reply:
            assert reply.status_code == 200  # its first token is a second away
            assert http.get(url + "/_record").json()["active"] == 1
        deadline = time.monotonic() + 20
        while http.get(url + "/_record").json()["active"] and time.monotonic() < deadline:
            time.sleep(0.005)
        # Freed before its first token: noticed by a failed write, it would have sent one.
        [hung_up] = recorded(url)
        assert http.get(url + "/_record").json()["active"] == 0
        assert hung_up["tokens"] == 0 and not hung_up["completed"]
        short = {**body, "max_tokens": 3}
        for _ in range(3):
            assert http.post(url + "/v1/chat/completions", json=short).status_code == 200
        assert http.get(url + "/_record").json()["active"] == 0


@settings(max_examples=150, deadline=None)
@given(
    model=st.sampled_from(["synthetic", "synthetic-final", "synthetic-nousage", 'a %d "b" 100%']),
    per_chunk=st.integers(1, 8),
    total=st.integers(1, 80),
    prompt_tokens=st.integers(0, 5000),
    reasoning=st.integers(0, 90),
)
def test_a_rendered_reply_says_what_it_sends(model, per_chunk, total, prompt_tokens, reasoning):
    """Every event is the JSON it claims: its tokens, their kind and, with continuous usage, the
    running counts (formatted into a template, not encoded per event), a model name with `%` too."""
    reply = _events(model, per_chunk, total, prompt_tokens, reasoning, False)
    sent = 0
    for chunk, n in zip(reply.chunks, reply.counts, strict=True):
        assert chunk.startswith(b"data: ") and chunk.endswith(b"\n\n")
        data = json.loads(chunk[6:])
        kind = "reasoning_content" if sent < reasoning else "content"
        assert data["model"] == model
        assert data["choices"][0]["delta"] == {kind: "tok " * n}
        sent += n
        if model in ("synthetic-final", "synthetic-nousage"):
            assert "usage" not in data
        else:
            assert data["usage"] == {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": sent,
                "total_tokens": prompt_tokens + sent,
            }
    assert sent == total
