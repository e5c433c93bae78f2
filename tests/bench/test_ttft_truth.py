"""TTFT at many streams against the synthetic server's record of what a client should see.

A burst of 32 reaches the server together; its loop reads them one by one, rendering each new
reply shape first, so the last is read tens of ms after it was sent. The server's engine-side
``ttft_s`` starts when it read the request and leaves that wait out; the client sees it. The truth
for the client is ``ttft_received_s``, which starts when the kernel received the request."""

from __future__ import annotations

import asyncio
import socket
import statistics
import time

import httpx
import pytest

from rigbook_testkit.synthetic_accept import listener, serve_stamped
from tests.bench.helpers import bench, start_synthetic


@pytest.fixture(scope="module")
def server():
    # One token per event and 600-event replies: each of the prompts' reply shapes costs the
    # server's loop milliseconds to render the first time, as the burst arrives.
    proc, url = start_synthetic(
        "--rate", "600", "--falloff", "0", "--tokens-per-chunk", "1", "--ttft-s", "0.03"
    )
    yield url
    proc.terminate()
    proc.wait(10)


def test_ttft_at_32_streams_matches_what_the_server_received(server, tmp_path):
    result = bench(server, tmp_path / "r.json", concurrency=[32], requests=32, max_tokens=600)
    own = [r for r in httpx.get(server + "/_record").json()["requests"] if r["tokens"]]
    cell = result.cells[0]
    assert len(own) == len(cell.requests) == 32
    client = sorted(
        1000 * (r.first_token_s - r.sent_s) for r in cell.requests if r.first_token_s is not None
    )
    truth = sorted(1000 * r["ttft_received_s"] for r in own)
    # Per request the client's TTFT is the truth plus how late the client read the first token,
    # less how late the server stamped it (after its write returned: a server preempted between
    # the two stamps late); sorting keeps every rank within the largest of these. Both are under
    # a millisecond on an idle machine and reached 2 ms with three busy loops on the two cores;
    # 10 ms is a scheduler's time slice or two on a loaded machine, and under half of the wait
    # the engine-side ttft_s leaves out here (16-22 ms at the median on a fresh server).
    gaps = [c - t for c, t in zip(client, truth, strict=True)]
    assert -10.0 < statistics.median(gaps) < 10.0, (client, truth)


def test_received_is_the_kernels_time_not_the_busy_loops():
    """A request sent while the server's loop is blocked is stamped when it was sent."""

    async def run() -> tuple[float, float, float]:
        sock = listener("127.0.0.1", 0, reuse_port=False)
        seen: asyncio.Future[tuple[float, float]] = asyncio.get_running_loop().create_future()

        async def handle(reader, writer, received: float) -> None:
            await reader.readexactly(5)
            seen.set_result((received, time.perf_counter()))
            writer.close()

        accepting = asyncio.create_task(serve_stamped(sock, handle))
        await asyncio.sleep(0)
        client = socket.create_connection(sock.getsockname())
        client.sendall(b"hello")
        sent = time.perf_counter()
        time.sleep(0.2)  # the loop is busy: nothing is accepted or read meanwhile
        received, read = await asyncio.wait_for(seen, 10)
        client.close()
        accepting.cancel()
        sock.close()
        return sent, received, read

    sent, received, read = asyncio.run(run())
    # The read comes after the block; the stamp is the send's (the kernel's, a hair after it).
    assert read - sent >= 0.2
    assert received - sent < 0.1, received - sent
