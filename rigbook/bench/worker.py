"""A bench worker process: one uvloop loop streaming its share of each cell (rigbook.bench.workers).

Started by the parent as ``python -c "...worker_main(fd)"`` with one end of a socket pair. It
reads its setup, proves the clock (:func:`~rigbook.bench.worker_protocol.check_clock`), says it
is ready, then runs each order with the same schedulers a one-process cell uses, under its own
:class:`~rigbook.bench.client.ReadWatch` and :class:`~rigbook.bench.scheduler.ClientMonitor`.
It says when each request starts, sends each as it ends, and its client load when the cell is
over. It leaves on ``Quit`` or when the parent's end closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import time
import traceback
from multiprocessing.connection import Connection

from rigbook.bench.client import RawRequest, ReadWatch, Target, stream_chat
from rigbook.bench.result import ClientLoad
from rigbook.bench.scheduler import ClientMonitor, run_burst, run_sustained
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


def worker_main(fd: int) -> None:
    """A worker process on connection ``fd``: take the setup, prove the clock, then stream the
    orders the parent sends until told to quit."""
    from rigbook.bench.measure import loop_factory

    # A terminal's Ctrl-C reaches the whole process group; the parent decides how the run stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    try:
        setup: WorkerSetup = conn.recv()
        check_clock()
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            runner.run(_serve(conn, setup))
    except Exception as exc:  # noqa: BLE001 - whatever it is, the parent must hear why
        with contextlib.suppress(OSError):
            conn.send(Crashed(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"))


async def _serve(conn: Connection, setup: WorkerSetup) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Order | StopCell | Quit] = asyncio.Queue()
    stop = asyncio.Event()

    def readable() -> None:
        nonlocal stop
        while conn.poll():
            try:
                msg = conn.recv()
            except (EOFError, OSError):  # the parent is gone
                msg = Quit()
            if isinstance(msg, (StopCell, Quit)):
                stop.set()
            if isinstance(msg, Quit):
                loop.remove_reader(conn.fileno())
                inbox.put_nowait(msg)
                return
            inbox.put_nowait(msg)

    loop.add_reader(conn.fileno(), readable)
    target = Target(setup.url)
    conn.send(Ready(pid=os.getpid(), clock=time.perf_counter()))
    gc.collect()
    gc.freeze()
    while True:
        msg = await inbox.get()
        if isinstance(msg, Quit):
            return
        if isinstance(msg, StopCell):  # late: that cell has already ended
            continue
        stop = asyncio.Event()
        load = await _stream(conn, setup, target, msg, stop)
        conn.send(CellDone(load))


async def _stream(
    conn: Connection, setup: WorkerSetup, target: Target, order: Order, stop: asyncio.Event
) -> ClientLoad:
    """One cell's share: the same schedulers as a one-process run, with this worker's numbers."""
    reads = ReadWatch()
    monitor = ClientMonitor(reads)
    body, stall = setup.bodies.body, setup.stall_s
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
        await stream_chat(target, body(i), stall, raw, reads=reads)

    def on_done(k: int, raw: RawRequest) -> None:
        conn.send(Finished(number(k), PackedRaw.pack(raw)))

    monitor.start()
    if isinstance(order, BurstOrder):
        await run_burst(
            send, on_done, requests=len(order.indices), concurrency=order.lanes, stop=stop
        )
    else:
        duration = max(order.end - time.perf_counter(), 0.0)
        await run_sustained(send, on_done, concurrency=order.lanes, duration_s=duration, stop=stop)
    return await monitor.stop()
