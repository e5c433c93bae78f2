"""A bench worker process: one uvloop loop streaming its share of each cell (rigbook.bench.workers).

Started by the parent as ``python -c "...worker_main(fd)"`` with one end of a socket pair. It
reads its setup, proves the clock (:func:`~rigbook.bench.worker_protocol.check_clock`), says it
is ready, then runs each order with the same schedulers a one-process cell uses, through its own
client (:mod:`rigbook.bench.clients`, the kind the parent chose).
It says when each request starts, sends each as it ends, and its client load when the cell is
over. It leaves on ``Quit`` or when the parent's end closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import pickle
import signal
import socket
import struct
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection

from rigbook.bench.client import Target
from rigbook.bench.clients import open_client
from rigbook.bench.result import ClientLoad
from rigbook.bench.scheduler import run_burst, run_sustained
from rigbook.bench.worker_protocol import (
    BurstOrder,
    CellDone,
    Crashed,
    Finished,
    Order,
    PackedRaw,
    Quit,
    Ready,
    Started,
    StopCell,
    WorkerSetup,
    check_clock,
)
from rigbook.openai.stream import RawRequest


def worker_main(fd: int) -> None:
    """A worker process on socket ``fd``: take the setup, prove the clock, then stream the
    orders the parent sends until told to quit."""
    from rigbook.bench.measure import loop_factory

    # A terminal's Ctrl-C reaches the whole process group; the parent decides how the run stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The setup is read before the loop runs, through a Connection on a copy of the descriptor
    # (closing it closes only the copy); the loop then owns the socket.
    with Connection(os.dup(fd)) as first:
        setup: WorkerSetup = first.recv()
    sock = socket.socket(fileno=fd)
    # Its own copy of the socket, for the one message sent after the loop (and its socket) closed.
    last = Connection(os.dup(fd))
    try:
        check_clock()
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            runner.run(_serve(sock, setup))
    except Exception as exc:  # whatever it is, the parent must hear why
        with contextlib.suppress(OSError):
            os.set_blocking(last.fileno(), True)
            last.send(Crashed(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"))
        raise SystemExit(1) from exc
    finally:
        last.close()


class Channel(asyncio.Protocol):
    """The worker's end of the socket pair on its loop. Messages are framed as multiprocessing's
    ``Connection`` frames them (a 4-byte big-endian length, then the pickle), so the parent reads
    them with ``Connection.recv``. The transport buffers what the socket cannot take at once: a
    parent slow to read never blocks this loop (a blocking send would stall every stream)."""

    def __init__(self, received: Callable[[object], None]) -> None:
        self.received = received
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= 4:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < 4 + size:
                return
            msg = pickle.loads(self.buffer[4 : 4 + size])
            del self.buffer[: 4 + size]
            self.received(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self.received(Quit())  # the parent is gone

    def send(self, msg: object) -> None:
        """Queue one message to the parent."""
        payload = pickle.dumps(msg, pickle.HIGHEST_PROTOCOL)
        assert self.transport is not None
        self.transport.write(_HEADER.pack(len(payload)) + payload)


# multiprocessing.connection's frame header for messages under 2 GiB
_HEADER = struct.Struct("!i")


async def _serve(sock: socket.socket, setup: WorkerSetup) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Order | StopCell | Quit] = asyncio.Queue()
    stop = asyncio.Event()

    def received(msg: object) -> None:
        if isinstance(msg, (StopCell, Quit)):
            stop.set()
        inbox.put_nowait(msg)  # type: ignore[arg-type]

    _, channel = await loop.create_unix_connection(lambda: Channel(received), sock=sock)
    target = Target(setup.url)
    channel.send(Ready(pid=os.getpid(), clock=time.perf_counter()))
    gc.collect()
    gc.freeze()
    while True:
        msg = await inbox.get()
        if isinstance(msg, Quit):
            return
        if isinstance(msg, StopCell):  # late: that cell has already ended
            continue
        stop = asyncio.Event()
        load = await _stream(channel, setup, target, msg, stop)
        channel.send(CellDone(load))


async def _stream(
    conn: Channel, setup: WorkerSetup, target: Target, order: Order, stop: asyncio.Event
) -> ClientLoad:
    """One cell's share: the same schedulers as a one-process run, with this worker's numbers."""
    client = open_client(setup.client, target, setup.stall_s)
    body = setup.bodies.body
    if isinstance(order, BurstOrder):
        indices = order.indices

        def number(k: int) -> int:
            return indices[k]
    else:
        first, step = order.first, order.step

        def number(k: int) -> int:
            return first + k * step

    async def send(k: int, raw: RawRequest) -> None:
        i = number(k)
        conn.send(Started(i))
        await client.send(body(i), raw)

    def on_done(k: int, raw: RawRequest) -> None:
        conn.send(Finished(number(k), PackedRaw.pack(raw)))

    client.start()
    try:
        if isinstance(order, BurstOrder):
            await run_burst(
                send, on_done, requests=len(order.indices), concurrency=order.lanes, stop=stop
            )
        else:
            duration = max(order.end - time.perf_counter(), 0.0)
            await run_sustained(
                send, on_done, concurrency=order.lanes, duration_s=duration, stop=stop
            )
        return await client.stop()
    finally:
        client.close()
