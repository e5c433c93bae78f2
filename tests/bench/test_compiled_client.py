"""The compiled client (``rigbook/bench/_reader.c``) against the Python client it replaces.

Both fill a :class:`~rigbook.openai.stream.RawRequest` with the same parser; here a scripted
server on loopback sends every framing and fault the reader must handle, split at any byte,
and the two clients must agree on everything but the timestamps. Then what the compiled client
exists for: a stalled event loop moves no timestamp (the kernel stamped each read), while a
stalled process that let a read hold several events is flagged.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigbook.bench import compiled
from rigbook.bench.client import Target
from rigbook.bench.clients import LoopClient, resolve
from rigbook.bench.metrics import distribution
from rigbook.bench.result import Cell, ClientLoad, load_result
from rigbook.bench.scheduler import judge_client
from rigbook.codes import Code
from rigbook.errors import InputError
from rigbook.openai.stream import RawRequest
from tests.bench.helpers import (
    bench,
    follows_from_records,
    outcome,
    rigbook,
    start_bench,
    synthetic_server,
)
from tests.conftest import free_port, scripted_server

pytestmark = pytest.mark.skipif(not compiled.available(), reason="the reader was not built")

SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def event(data: dict | str, end: bytes = b"\n\n") -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return b"data: " + text.encode() + end


def token(text: str = "x", usage: int | None = None) -> dict:
    chunk: dict = {"choices": [{"index": 0, "delta": {"content": text}}]}
    if usage is not None:
        chunk["usage"] = {"prompt_tokens": 5, "completion_tokens": usage}
    return chunk


FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
USAGE = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}
EVENTS = (
    event(token("a"))
    + event(token("b"))
    + event({"choices": [{"index": 0, "delta": {"reasoning_content": "r"}}]})
    + event(FINISH)
    + event(USAGE)
    + b"data: [DONE]\n\n"
)


def chunked(body: bytes, size: int = 17) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


# Each reply as a server sends it, byte for byte; the connection closes after it.
REPLIES = {
    "chunked": SSE + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(EVENTS),
    "content-length": SSE + b"Content-Length: %d\r\n\r\n" % len(EVENTS) + EVENTS,
    "close-framed": SSE + b"Connection: close\r\n\r\n" + EVENTS,
    "crlf events": SSE + b"\r\n" + EVENTS.replace(b"\n", b"\r\n"),
    "bare cr events": SSE + b"\r\n" + EVENTS.replace(b"\n", b"\r"),
    "mixed line ends": SSE + b"\r\n" + EVENTS.replace(b"\n\n", b"\r\n\r", 3),
    "comments and other fields": SSE
    + b"\r\n: keep-alive\n\nevent: message\nid: 7\n"
    + EVENTS.replace(b"\n\n", b"\n\n: ping\n\n"),
    "one event on two data lines": SSE
    + b"\r\n"
    + b'data: {"choices": [{"index": 0,\ndata: "delta": {"content": "x"}}]}\n\n'
    + EVENTS,
    "usage on every token": SSE
    + b"\r\n"
    + event(token("a", 1))
    + event(token("b", 2))
    + event({**FINISH, "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
    + b"data: [DONE]\n\n",
    "100 continue first": b"HTTP/1.1 100 Continue\r\n\r\n" + SSE + b"\r\n" + EVENTS,
    "http 500": b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 25\r\n\r\n"
    + b'{"error": "out of memory"}'[:25],
    "in-band error": SSE
    + b"\r\n"
    + event(token("a"))
    + event({"error": {"message": "engine died", "code": 500}})
    + event(token("b")),
    "not json": SSE + b"\r\n" + event(token("a")) + b"data: {nope\n\n",
    "wrong shape": SSE + b"\r\n" + event(token("a")) + event({"choices": "x"}) + event(token("b")),
    "closed without done": SSE + b"\r\n" + event(token("a")) + event(token("b")),
    "closed before a reply": b"",
    "not http": b"SSH-2.0-OpenSSH_9.2\r\n",
}
# Real servers' replies (tests/fixtures/streams): tokens read in C, finish and usage in Python.
for _name in ("llama-server", "vllm"):
    _body = (Path(__file__).parent.parent / "fixtures" / "streams" / f"{_name}.sse").read_bytes()
    REPLIES[_name] = SSE + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(_body, 300)


async def stream_once(kind: str, url: str, stall_s: float = 5.0) -> RawRequest:
    target = Target(url)
    client = compiled.CompiledClient(target, stall_s) if kind == "compiled" else None
    loop_client = LoopClient(target, stall_s)
    raw = RawRequest()
    try:
        await (client or loop_client).send(b'{"model": "m"}', raw)
    finally:
        if client:
            client.close()
    return raw


async def both(pieces: list[bytes], **kw) -> tuple[RawRequest, RawRequest]:
    server, url = await scripted_server(pieces, **kw)
    async with server:
        return await stream_once("python", url), await stream_once("compiled", url)


def assert_sane_times(raw: RawRequest) -> None:
    assert list(raw.times) == sorted(raw.times)
    assert all(raw.sent <= t <= (raw.done or t) for t in raw.times)


@pytest.mark.parametrize("name", list(REPLIES))
def test_both_clients_read_every_reply_alike(name):
    reply = REPLIES[name]
    python, native = asyncio.run(both([reply]))
    if name == "not http":  # both drop it; only the Python client quotes its HTTP parser
        assert native.error == "dropped: the connection closed before a reply"
        assert python.error is not None and python.error.startswith("dropped: bad HTTP")
        return
    assert outcome(native) == outcome(python)
    assert_sane_times(native)
    if name in (
        "chunked",
        "content-length",
        "close-framed",
        "crlf events",
        "bare cr events",
        "mixed line ends",
    ):
        assert native.error is None and native.events == 3 and native.finish_reason == "length"
    if name in ("llama-server", "vllm"):
        assert (
            native.error is None
            and native.events >= 20
            and native.final_usage["completion_tokens"] == 24
        )
    if (
        name == "wrong shape"
    ):  # before: AttributeError in the loop's callback, the stream never ended
        assert native.error == 'bad_event: {"choices": "x"}' and native.events == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(
        [
            "chunked",
            "content-length",
            "crlf events",
            "bare cr events",
            "mixed line ends",
            "usage on every token",
        ]
    ),
    cuts=st.lists(st.integers(1, 10_000), max_size=8),
)
def test_a_reply_split_at_any_bytes_reads_the_same(name, cuts):
    """The reader frames HTTP, chunks and events across reads; where the reads fall must not
    change what it finds."""
    reply = REPLIES[name]
    at = sorted({c % len(reply) for c in cuts} - {0})
    pieces = [reply[i:j] for i, j in zip([0, *at], [*at, len(reply)], strict=True)]
    python, native = asyncio.run(both(pieces, pause_s=0.001))
    assert outcome(native) == outcome(python)
    assert_sane_times(native)


def test_a_silent_server_is_a_stall_and_a_closed_port_a_connect_error():
    async def run() -> tuple[RawRequest, RawRequest]:
        server, url = await scripted_server([SSE + b"\r\n" + event(token("a"))], hold_s=1.0)
        async with server:
            stalled = await stream_once("compiled", url, stall_s=0.2)
        refused = await stream_once("compiled", f"http://127.0.0.1:{free_port()}")
        return stalled, refused

    stalled, refused = asyncio.run(run())
    assert stalled.error == "stalled: no data for 0.2 s" and stalled.events == 1
    assert refused.error is not None and refused.error.startswith("connect: ")


def test_cancelling_a_stream_keeps_what_had_arrived():
    async def run() -> RawRequest:
        server, url = await scripted_server(
            [SSE + b"\r\n" + event(token("a")) + event(token("b"))], hold_s=5
        )
        async with server:
            client = compiled.CompiledClient(Target(url), 10.0)
            raw = RawRequest()
            task = asyncio.create_task(client.send(b"{}", raw))
            await asyncio.sleep(0.3)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            client.close()
        return raw

    raw = asyncio.run(run())
    assert raw.events == 2 and raw.error is None


@pytest.fixture(scope="module")
def url():
    with synthetic_server("--rate 50 --tokens-per-chunk 1 --falloff 0") as base:
        yield base


def one_lane_stalled_once(
    url: str, tmp_path, on: str, stall: Callable[[], object], *, requests: int, max_tokens: int
) -> Cell:
    """A one-lane cell of the compiled client whose progress callback calls ``stall`` at the
    first ``on`` event: on the event loop, as any work of the client's own would run."""
    stalled = []

    def progress(event: str, data: dict) -> None:
        if event == on and not stalled:
            stalled.append(True)
            stall()

    result = bench(
        url,
        tmp_path / "r.json",
        concurrency=[1],
        requests=requests,
        max_tokens=max_tokens,
        client="compiled",
        progress=progress,
    )
    assert stalled
    return result.cells[0]


def test_a_stalled_event_loop_loses_no_token(url, tmp_path):
    """The Python client stamps a read when its loop gets to it; the compiled one has the
    kernel's stamp, so a loop that stops for 300 ms mid-stream (six gaps of 20 ms) moves no
    timestamp (how far from the server's figures: `make bench-truth`, its stalled-loop rows)
    and loses no token."""
    cell = one_lane_stalled_once(
        url,
        tmp_path,
        "cell",
        lambda: asyncio.get_running_loop().call_later(0.5, time.sleep, 0.3),
        requests=1,
        max_tokens=100,
    )
    assert cell.client is not None and cell.client.timestamps == "kernel"
    [record] = cell.requests
    assert record.ok and record.output_tokens == 100 and record.chunks == 100
    follows_from_records(cell)


def test_a_stopped_process_that_merged_reads_is_flagged(url, tmp_path):
    """Stopped whole (SIGSTOP: the reader thread too), the client finds several events of a
    stream waiting in one read: their stamps are the read's, so the token gaps are marked."""
    out = tmp_path / "r.json"
    proc = start_bench(url, out, "--concurrency 4 --requests 4 --max-tokens 300 --warmup 0")
    try:
        # Stop it mid-stream whatever its start-up took: once the server streams all four
        # (6 s each at 50 tok/s), half a second in.
        deadline = time.monotonic() + 60
        while "num_requests_running" not in (page := httpx.get(f"{url}/metrics").text) or not (
            page.rstrip().endswith(" 4")
        ):
            assert time.monotonic() < deadline and proc.poll() is None, page
            time.sleep(0.05)
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGCONT)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    cell = load_result(out).cells[0]
    assert cell.client is not None and cell.client.timestamps == "kernel"
    assert cell.client.merged_read_worst_ms is not None
    assert cell.client.merged_read_worst_ms >= 250.0, cell.client.model_dump(
        exclude={"loop_lag_ms"}
    )
    # A merged read mid-stream moves per-token stamps, not a stream's first or last token: the
    # token gaps are marked and the rates, which it cannot move, are kept.
    assert "itl_ms_worst_p99" in cell.client.marked, cell.client.model_dump(exclude={"loop_lag_ms"})


def test_a_compiled_run_counts_every_token_and_measures_its_reads(url, tmp_path):
    """Its accuracy against the server's own record is `make bench-truth`'s figure."""
    result = bench(
        url, tmp_path / "r.json", concurrency=[8], requests=8, max_tokens=100, client="compiled"
    )
    cell = result.cells[0]
    assert cell.valid and len(cell.requests) == 8
    assert cell.client is not None and cell.client.merged_read_worst_ms is not None
    assert all(r.output_tokens == 100 and r.chunks == 100 for r in cell.requests)
    follows_from_records(cell)


def test_asking_for_the_compiled_client_on_https_is_a_clear_error(tmp_path):
    with pytest.raises(InputError) as caught:
        resolve("compiled", Target("https://example.invalid"))
    assert caught.value.code is Code.E_BENCH_CLIENT
    assert resolve("auto", Target("https://example.invalid")) == "python"
    done = rigbook(
        "bench", "https://127.0.0.1:9", "--client", "compiled", "--out", str(tmp_path / "r.json")
    )
    assert done.returncode != 0 and "E_BENCH_CLIENT" in done.stdout + done.stderr


def test_a_kernel_without_receive_stamps_gets_the_python_client(monkeypatch):
    """A sandboxed kernel (gVisor's) may take SO_TIMESTAMPNS and send no stamp: ``auto`` then
    streams through Python, and asking for the compiled client says why."""
    assert compiled.kernel_stamps(), "this machine's kernel stamps what it receives"
    monkeypatch.setattr(compiled, "kernel_stamps", lambda: False)
    assert resolve("auto", Target("http://127.0.0.1:9")) == "python"
    with pytest.raises(InputError) as caught:
        resolve("compiled", Target("http://127.0.0.1:9"))
    assert caught.value.code is Code.E_BENCH_CLIENT
    assert "receive stamps" in str(caught.value)


class _Unstamping:
    """The reader, with each socket's stamps turned off once it is handed over: what a kernel
    that sends no stamp looks like to the thread."""

    def __init__(self, reader) -> None:
        self.reader = reader

    def __getattr__(self, name: str):
        return getattr(self.reader, name)

    def add(self, fd: int, stall_s: float) -> int:
        stream = self.reader.add(fd, stall_s)
        with socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM) as same:
            same.setsockopt(socket.SOL_SOCKET, compiled._SO_TIMESTAMPNS, 0)
        return stream


def test_reads_without_the_kernels_stamp_are_counted_and_flag_the_cell(url, tmp_path, monkeypatch):
    """Events read without a stamp carry when the thread woke, which nothing bounds: before
    they were counted, such a cell claimed kernel stamps and was judged as if it had them."""
    built = compiled.Reader
    monkeypatch.setattr(compiled, "Reader", lambda **kw: _Unstamping(built(**kw)))
    cell = bench(
        url, tmp_path / "r.json", concurrency=[2], requests=2, max_tokens=20, client="compiled"
    ).cells[0]
    load = cell.client
    # At least one read a stream: how many events a read brings depends on when the machine
    # schedules the thread (under two busy loops, 40 tokens came in 11 reads).
    assert load is not None and load.unstamped_reads is not None and load.unstamped_reads >= 2
    assert cell.client_bound and "receive stamp" in (load.reason or "")


def kernel_load(merged_ms: float, end_late_ms: float, turnover_ms: float = 0.0) -> ClientLoad:
    return ClientLoad(
        loop_lag_ms=distribution([0.1]),
        timestamps="kernel",
        merged_read_worst_ms=merged_ms,
        end_late_worst_ms=end_late_ms,
        next_request_late_worst_ms=turnover_ms,
        cpu_s=0.1,
        wall_s=1.0,
        cpu_fraction=0.1,
        client_bound=False,
    )


@pytest.mark.parametrize(
    ("merged", "late", "turnover", "flagged"),
    [
        (2.0, 1.0, 1.0, False),
        (15.0, 1.0, 1.0, True),
        # an end taken late with every turnover on time (the last streams of a burst): nothing moved
        (2.0, 15.0, 1.0, False),
        # one request: no lane turned over, so no late turnover idled the server
        (2.0, 1.0, 15.0, False),
        # under half the gap, yet 2.6 % of a 0.4 s reply's rate
        (9.9, 9.9, 9.9, True),
    ],
)
def test_kernel_stamps_are_judged_on_merged_reads_and_late_turnovers(
    merged, late, turnover, flagged, url, tmp_path
):
    records = (
        bench(url, tmp_path / "r.json", concurrency=[1], requests=1, max_tokens=20)
        .cells[0]
        .requests
    )
    # 50 tok/s, one token an event: a 0.4 s reply, whose rate 4 ms move by 1 %
    judged = judge_client(kernel_load(merged, late, turnover), records)
    assert judged.client_bound is flagged


def test_a_loop_stalled_between_a_lanes_requests_is_flagged(url, tmp_path):
    """The stream's end is taken at once, then the loop stops for 300 ms while the lane's next
    request connects (here in the progress callback; a GC pause or a descheduled main thread
    does the same): the server's slot idles and the aggregate reads low. No timestamp moved and
    no end was late, so only the turnover shows it; before it was kept, this cell was valid."""
    cell = one_lane_stalled_once(
        url, tmp_path, "request", lambda: time.sleep(0.3), requests=2, max_tokens=20
    )
    load = cell.client
    assert load is not None and load.timestamps == "kernel"
    assert load.end_late_worst_ms is not None and load.next_request_late_worst_ms is not None
    assert load.next_request_late_worst_ms >= 250.0, load.model_dump(exclude={"loop_lag_ms"})
    assert cell.client_bound and "next request" in (load.reason or "")


def test_each_lanes_turnover_is_measured(url, tmp_path):
    """Two lanes of three requests turn over four times; how late is measured (the rule that
    judges it: test_kernel_stamps_are_judged_on_merged_reads_and_late_turnovers)."""
    cell = bench(
        url, tmp_path / "r.json", concurrency=[2], requests=6, max_tokens=20, client="compiled"
    ).cells[0]
    load = cell.client
    assert cell.valid and len(cell.requests) == 6
    assert load is not None and load.next_request_late_worst_ms is not None
    assert load.next_request_late_worst_ms >= 0.0


def test_the_handshake_round_trip_is_read_from_the_kernel():
    """``TCP_INFO`` read at the right offsets: a loopback handshake takes microseconds and was
    sent once; a socket that is not TCP has none."""
    with (
        socket.create_server(("127.0.0.1", 0)) as server,
        socket.create_connection(server.getsockname()) as sock,
    ):
        kernel = compiled.handshake(sock)
    assert kernel is not None
    rtt, retransmitted = kernel
    assert 0.0 < rtt < 0.05 and not retransmitted
    left, right = socket.socketpair()
    with left, right:
        assert compiled.handshake(left) is None


def test_a_first_token_written_with_the_role_is_no_merged_read():
    """llama-server writes the role event and the first token together after the TTFT; the read
    that brings them held two events, but the thread was waiting in epoll_wait all along: no
    timestamp moved, and the demo's every cell was flagged for a 124 ms "merge" before."""
    role = event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
    pieces = [SSE + b"\r\n", role + event(token("a")), event(token("b")), EVENTS]

    async def run() -> ClientLoad:
        server, url = await scripted_server(
            pieces, pause_s=0.2
        )  # under the thread's 250 ms longest wait
        async with server:
            client = compiled.CompiledClient(Target(url), 10.0)
            client.start()
            await client.send(b"{}", RawRequest())
            load = await client.stop()
            client.close()
        return load

    load = asyncio.run(run())
    # A merged read here would be a pause (200 ms) wide: half of it tells them apart.
    assert load.merged_read_worst_ms is not None and load.merged_read_worst_ms < 100.0


def test_the_pace_follows_the_gap_between_tokens_not_the_role_events():
    """vLLM sends the role event at once and the first token after the prefill: before, that gap
    seeded the reader's pace, which sat near its 10 ms ceiling for the first tokens of each cell
    (a read held back that long stamps an event with the bytes of the next that came with it)."""
    role = event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
    # the role event, a 200 ms prefill (50 empty writes 4 ms apart), then a token every 4 ms
    pieces = [SSE + b"\r\n" + role, *[b""] * 50, *(event(token()) for _ in range(12)), EVENTS]

    async def run() -> float:
        server, url = await scripted_server(pieces, pause_s=0.004)
        async with server:
            client = compiled.CompiledClient(Target(url), 10.0)
            await client.send(b"{}", RawRequest())
            gap = client._reader.stats()["gap"]
            client.close()
        return gap

    assert asyncio.run(run()) < 0.05


def test_a_read_of_a_token_and_the_start_of_a_later_event_is_a_merged_read(monkeypatch):
    """A reader late by 250 ms (its pace held there) reads a token together with half of the next
    event, written 40 ms after it: the kernel keeps the newest stamp, so the token carries the
    later bytes'. Before, only a read that completed several events was a merged read."""
    monkeypatch.setattr(compiled, "PACE_MIN_S", 0.25)
    monkeypatch.setattr(compiled, "PACE_MAX_S", 0.25)
    role = event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
    third = event(token("c"))
    # 40 ms apart: the role and a, b, half of c, then (after 8 empty writes) the rest
    pieces = [SSE + b"\r\n" + role + event(token("a")), event(token("b")), third[:10]]
    pieces += [*[b""] * 8, third[10:] + EVENTS]

    async def run() -> tuple[ClientLoad, RawRequest]:
        server, url = await scripted_server(pieces, pause_s=0.04)
        async with server:
            client = compiled.CompiledClient(Target(url), 10.0)
            client.start()
            raw = RawRequest()
            await client.send(b"{}", raw)
            load = await client.stop()
            client.close()
        return load, raw

    load, raw = asyncio.run(run())
    assert raw.error is None and raw.events == 6
    assert load.merged_read_worst_ms is not None and load.merged_read_worst_ms >= 20.0, load
