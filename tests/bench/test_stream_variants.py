"""Streams that are not the common case, read by both clients over the same server scripts.

Each variant is a reply a real server, or a proxy in front of one, may send: a reply capped below
``max_tokens`` with no usage, tool-call deltas, bare-CR line endings, a gzip-compressed stream, a
non-streamed JSON answer, a stream that ends by closing the connection, a stream held back and sent
in one piece. Each either measures right or ends with an error that names the stream's own fault,
and the Python client and the compiled one agree on it.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from dataclasses import dataclass, field

import pytest

from rigbook.bench import compiled
from rigbook.bench.client import Target
from rigbook.bench.clients import LoopClient
from rigbook.bench.metrics import buffered_requests, to_record
from rigbook.openai.stream import RawRequest
from tests.bench.helpers import measure_bench, outcome
from tests.conftest import scripted_server

SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
CLIENTS = ["python", "compiled"] if compiled.available() else ["python"]


def event(data: dict | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return b"data: " + text.encode() + b"\n\n"


def token(text: str = "x") -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": text}}]})


def tool_delta(k: int) -> bytes:
    call: dict = {"index": 0, "function": {"arguments": f'"{k}"'}}
    if k == 0:
        call.update(id="call_1", type="function", function={"name": "f", "arguments": ""})
    return event({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})


def finish(reason: str, usage: int | None = None) -> bytes:
    data: dict = {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}
    if usage is not None:
        data["usage"] = {"prompt_tokens": 5, "completion_tokens": usage}
    return event(data)


DONE = b"data: [DONE]\n\n"
# A whole reply's events: what the buffered and the compressed variants send at once.
TEN = b"".join(token(str(k)) for k in range(10)) + finish("stop") + DONE
ANSWER = json.dumps(
    {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1},
    }
).encode()


@dataclass
class Variant:
    pieces: list[bytes]  # written one by one, PAUSE_S apart
    events: int = 0  # token events both clients read
    tokens: int = 0  # the reply's tokens as its record counts them (max_tokens is 40)
    error: str | None = None  # how the request's error starts, or None
    extra: dict = field(default_factory=dict)


PAUSE_S = 0.003
VARIANTS = {
    # The server stops at 30 tokens below max_tokens 40, says "length", sends no usage: 30.
    "capped length": Variant(
        [SSE, *(token() for _ in range(30)), finish("length") + DONE], events=30, tokens=30
    ),
    # 5 content tokens, then 5 tool-call deltas, the total in the final usage: 10, all stamped.
    "tool calls": Variant(
        [
            SSE,
            *(token() for _ in range(5)),
            *(tool_delta(k) for k in range(5)),
            finish("tool_calls", usage=10) + DONE,
        ],
        events=10,
        tokens=10,
    ),
    # The first token alone, then 15 events of three, the total only in the final usage: 46.
    "grouped tokens": Variant(
        [SSE, token(), *(token("a b c") for _ in range(15)), finish("stop", usage=46) + DONE],
        events=16,
        tokens=46,
    ),
    # CR alone ends lines (legal SSE), split across writes, a CR's LF in the next write.
    "bare cr": Variant(
        [
            SSE,
            *(token().replace(b"\n", b"\r") for _ in range(4)),
            token()[:-1] + b"\r",
            b"\n" + finish("stop").replace(b"\n", b"\r") + DONE,
        ],
        events=5,
        tokens=5,
    ),
    "gzip": Variant(
        [
            SSE.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"),
            gzip.compress(TEN),
        ],
        error="stream_format: the reply is compressed (Content-Encoding: gzip)",
    ),
    "non-streamed json": Variant(
        [
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
            b"Content-Length: %d\r\n\r\n" % len(ANSWER) + ANSWER
        ],
        error="stream_format: the reply is application/json, not an event stream",
    ),
    # The server ends the stream by closing the connection: no [DONE], the finish said it.
    "closed without done": Variant(
        [SSE, *(token() for _ in range(3)), finish("stop")], events=3, tokens=3
    ),
    # ... and without a finish: dropped, at once.
    "closed mid-stream": Variant(
        [SSE, *(token() for _ in range(3))],
        events=3,
        error="dropped: stream ended without finish_reason or [DONE]",
    ),
    # Held back, then the whole reply in one write: read right, flagged as one piece.
    "buffered": Variant([SSE, TEN], events=10, tokens=10, extra={"pause_s": 0.3}),
}


async def stream(kind: str, url: str, stall_s: float) -> RawRequest:
    target = Target(url)
    client = compiled.CompiledClient(target, stall_s) if kind == "compiled" else None
    raw = RawRequest()
    try:
        await (client or LoopClient(target, stall_s)).send(b'{"model": "m"}', raw)
    finally:
        if client:
            client.close()
    return raw


def read(name: str, kind: str, stall_s: float = 10.0) -> RawRequest:
    variant = VARIANTS[name]

    async def run() -> RawRequest:
        server, url = await scripted_server(
            variant.pieces, pause_s=variant.extra.get("pause_s", PAUSE_S)
        )
        async with server:
            return await stream(kind, url, stall_s)

    return asyncio.run(run())


def record(raw: RawRequest, *, hold_length: bool = False):
    return to_record(
        raw, cell=0, index=0, prompt_index=0, t0=raw.sent, max_tokens=40, hold_length=hold_length
    )


@pytest.mark.parametrize("name", list(VARIANTS))
def test_both_clients_read_each_variant_alike_and_right(name):
    variant = VARIANTS[name]
    raws = {kind: read(name, kind) for kind in CLIENTS}
    python = raws["python"]
    for kind, raw in raws.items():
        assert outcome(raw) == outcome(python), kind
        assert raw.events == variant.events, kind
        if variant.error is None:
            assert raw.error is None, (kind, raw.error)
            rec = record(raw)
            assert rec.ok and rec.output_tokens == variant.tokens, (kind, rec)
        else:
            assert raw.error is not None and raw.error.startswith(variant.error), (kind, raw.error)
        # Whatever the variant, the request ends when the stream does: never at the stall limit.
        assert raw.done is not None and raw.done - raw.sent < 3.0, kind


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_closed_connection_ends_the_request_at_once(kind):
    """Before, the compiled reader missed a close that came with the stream's last bytes (one
    edge for both) and waited out the stall limit; run a few times, as it was a race."""
    for _ in range(5):
        raw = read("closed without done", kind, stall_s=5.0)
        assert raw.error is None and raw.done is not None and raw.done - raw.sent < 1.0


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_reply_capped_below_max_tokens_without_usage_counts_what_came(kind):
    """Before, a "length" finish without usage was counted as max_tokens (40 here, +33 %)."""
    rec = record(read("capped length", kind))
    assert rec.output_tokens == 30 and rec.token_source == "client_fallback"
    held = record(read("capped length", kind), hold_length=True)
    assert not held.ok and held.error is not None and "no usage" in held.error


@pytest.mark.parametrize("kind", CLIENTS)
def test_tool_call_deltas_are_stamped_as_tokens(kind):
    """Before, both clients stamped only the content tokens and gave the final usage's ten
    tokens to the fifth: the last token's time was the fifth's, and the rate read about twice."""
    raw = read("tool calls", kind)
    times = list(raw.times)
    assert len(times) == 10 and times[-1] > times[4]
    rec = record(raw)
    gaps = rec.itl_ms
    assert rec.decode_tok_s is not None and gaps.max is not None
    # nine tokens after the first over nine gaps of about PAUSE_S: no gap spans several tokens
    assert rec.decode_tok_s < 2.0 / PAUSE_S


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_reply_in_one_piece_is_flagged_and_has_no_rate(kind):
    rec = record(read("buffered", kind))
    assert rec.ok and rec.output_tokens == 10 and rec.decode_tok_s is None
    assert buffered_requests([rec]) == [rec]


def test_a_streamed_reply_is_not_one_piece():
    assert buffered_requests([record(read("tool calls", "python"))]) == []


# --- through `bench`: the codes a user sees ----------------------------------------------------------


async def _bench_server(pieces: list[bytes], pause_s: float):
    """The scripted server behind a route for ``GET /v1/models``, which a bench asks first."""
    models = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        if lines[0].startswith(b"GET /v1/models"):
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(models) + models
            )
        elif lines[0].startswith(b"POST"):
            length = next(
                int(ln.split(b":")[1]) for ln in lines if ln.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            for k, piece in enumerate(pieces):
                if k:
                    await asyncio.sleep(pause_s)
                writer.write(piece)
                await writer.drain()
        else:
            writer.write(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def bench_against(name: str, tmp_path, **kw):
    variant = VARIANTS[name]
    done: list = []

    async def serve() -> None:
        server, url = await _bench_server(variant.pieces, variant.extra.get("pause_s", PAUSE_S))
        async with server:
            done.append(
                await asyncio.to_thread(
                    measure_bench, url, tmp_path / "r.json", model="m", concurrency=[1], **kw
                )
            )

    asyncio.run(serve())
    return done[0]


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("name", ["gzip", "non-streamed json"])
def test_a_reply_that_is_no_event_stream_is_its_own_code(name, kind, tmp_path):
    """Before, both failed as E_ENGINE_ERROR ("fix the engine"); the compiled client first waited
    out the stall limit on each request."""
    measured = bench_against(name, tmp_path, requests=1, warmup=1, client=kind, max_tokens=10)
    assert measured.verdict is not None and measured.verdict.code == "E_STREAM_FORMAT"
    assert "stream_format" in measured.verdict.details[0]


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_cell_of_buffered_replies_carries_a_warning(kind, tmp_path):
    measured = bench_against("buffered", tmp_path, requests=2, client=kind, max_tokens=10)
    result = measured.result
    assert any(w.line.startswith("W_STREAM_BUFFERED: cell 0") for w in result.warnings), (
        result.warnings
    )
    cell = result.cells[0]
    assert cell.metrics.per_request_decode_tok_s.n == 0
    # valid, but its TTFT is the whole reply: no perf point (before: published, unflagged)
    assert cell.valid and result.perf_points == []


@pytest.mark.parametrize("kind", CLIENTS)
def test_grouped_tokens_with_only_a_final_total_give_the_rate_of_the_tokens_after_the_first(kind):
    """Before, the final total was spread over every event, the first included: the first held
    46/16 tokens where it held one, and the per-request rate read low by 1.9/45 (4 %)."""
    rec = record(read("grouped tokens", kind))
    assert rec.token_source == "server_final" and rec.first_chunk_tokens == 1.0
    assert rec.first_token_s is not None and rec.last_token_s is not None
    assert rec.decode_tok_s is not None
    window = rec.last_token_s - rec.first_token_s
    assert rec.decode_tok_s * window == pytest.approx(45.0)
