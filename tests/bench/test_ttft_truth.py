"""TTFT at many streams against the synthetic server's record of what a client should see.

A burst of 32 reaches the server together; its loop reads them one by one, rendering each new
reply shape first, so the last is read tens of ms after it was sent. The server's engine-side
``ttft_s`` starts when it read the request and leaves that wait out; the client sees it. The truth
for the client is ``ttft_received_s``, which starts when the kernel received the request."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pytest

from rigbook_testkit.synthetic_accept import listener, serve_stamped
from tests.bench.helpers import bench, follows_from_records, start_synthetic


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


def test_ttft_at_32_streams_is_each_requests_own(server, tmp_path):
    """Every one of the burst is served and timed from its own send. How close the client's TTFT
    is to ``ttft_received_s`` at 32 streams is `make bench-truth`'s figure
    (``--streams 1,4,32``), not a bound a loaded machine may break here."""
    result = bench(server, tmp_path / "r.json", concurrency=[32], requests=32, max_tokens=600)
    own = [r for r in httpx.get(server + "/_record").json()["requests"] if r["tokens"]]
    cell = result.cells[0]
    assert len(own) == len(cell.requests) == 32
    assert cell.valid and cell.metrics.ttft_ms.n == 32
    assert all(r["ttft_received_s"] is not None for r in own)
    follows_from_records(cell)


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
