"""The wait for an idle server between probes: the counters it reads, and the waits it records."""

from __future__ import annotations

import asyncio
import json

import httpx

from rigbook.capacity.drain import IdleWait, in_flight_from_metrics, in_flight_from_slots
from rigbook_testkit.synthetic_curves import Curve
from tests.capacity.helpers import serve

VLLM = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 2.0
vllm:generation_tokens_total{model_name="m"} 512.0
"""


def test_the_gauges_are_summed_over_their_label_sets():
    assert in_flight_from_metrics(VLLM) == (
        "/metrics vllm:num_requests_running+vllm:num_requests_waiting",
        6,
    )
    assert in_flight_from_metrics("llamacpp:requests_processing 0\n") == (
        "/metrics llamacpp:requests_processing",
        0,
    )
    assert in_flight_from_metrics("vllm:generation_tokens_total 5.0\n") is None


def test_slots_count_the_busy_ones():
    assert in_flight_from_slots([{"id": 0, "is_processing": True}, {"is_processing": False}]) == 1
    assert in_flight_from_slots([{"id": 0, "state": 1}, {"id": 1, "state": 0}]) == 1
    assert in_flight_from_slots({"error": "slots disabled"}) is None
    assert in_flight_from_slots([{"id": 0}]) is None


async def _routes(answers: dict[str, tuple[int, str]]):
    """A loopback HTTP server answering GET PATH with (status, body) from ``answers``, 404 else."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ")[1].decode()
        status, body = answers.get(path, (404, "{}"))
        data = body.encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def test_llama_server_slots_are_read_when_there_is_no_gauge():
    async def go():
        slots = json.dumps([{"id": 0, "is_processing": False}, {"id": 1, "is_processing": False}])
        server, url = await _routes({"/slots": (200, slots)})
        async with server:
            return await IdleWait(url, drain_s=5.0, timeout_s=5.0)(after_stopped=True)

    drain = asyncio.run(go())
    assert (drain.source, drain.in_flight, drain.idle) == ("/slots", 0, True)


def test_with_no_counter_a_stopped_probe_is_followed_by_the_stated_wait():
    async def go(after_stopped: bool):
        server, url = await _routes({})
        async with server:
            wait = IdleWait(url, drain_s=0.2, timeout_s=5.0)
            return await wait(after_stopped), wait.source

    drain, source = asyncio.run(go(True))
    assert source == "none" and drain.source is None and drain.idle is None
    assert drain.waited_s >= 0.2
    drain, _ = asyncio.run(go(False))
    assert drain.source is None and drain.in_flight is None


def test_a_request_the_server_still_holds_is_waited_for():
    """A client hangs up; the synthetic server holds the request 0.5 s more (``linger_s``), as an
    engine that frees a cancelled request late; the wait reads its gauge until it shows none."""
    proc, url = serve(Curve(shape="linear", rate_tok_s=50, falloff=0, linger_s=0.5))
    try:
        body = {
            "model": "synthetic",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 100,
            "stream": True,
        }
        with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=10) as r:
            next(r.iter_bytes())  # the stream has begun: hang up in the middle of it
        drain = asyncio.run(IdleWait(url, drain_s=0.0, timeout_s=10.0)(after_stopped=True))
        assert drain.source == "/metrics vllm:num_requests_running"
        assert drain.in_flight == 1 and drain.idle is True
        assert httpx.get(url + "/_record").json()["active"] == 0
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_server_that_never_drains_is_given_up_on_and_a_stop_ends_the_wait():
    async def go(stop_first: bool):
        server, url = await _routes({"/metrics": (200, "vllm:num_requests_running 2\n")})
        async with server:
            stop = asyncio.Event()
            if stop_first:
                stop.set()  # as Ctrl-C during the wait: it ends at once, not after timeout_s
            return await IdleWait(url, drain_s=0.0, timeout_s=0.3 if not stop_first else 600)(
                True, stop
            )

    drain = asyncio.run(go(False))
    assert (drain.in_flight, drain.idle) == (2, False) and drain.waited_s >= 0.3
    drain = asyncio.run(go(True))
    assert (drain.in_flight, drain.idle) == (2, False)
