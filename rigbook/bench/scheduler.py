"""Schedulers: how requests are put in flight, and the client's watch on itself.

burst: N requests, at most C in flight; a new one starts as soon as one ends.
sustained: C streams kept in flight for S seconds; at the window's end the
streams still running are cut, and only tokens that arrived inside the window
count toward the aggregate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from rigbook.bench.backend import RawRequest
from rigbook.bench.metrics import distribution
from rigbook.bench.result import ClientLoad

# send(i, raw) streams request i into ``raw``, so a stream cut mid-way keeps what it received.
Send = Callable[[int, RawRequest], Awaitable[None]]
Done = Callable[[int, RawRequest], None]


class ClientMonitor:
    """Measures the client's own lag: a 10 ms ticker's lateness and the process CPU time."""

    TICK_S = 0.01

    def __init__(self) -> None:
        self._lags: list[float] = []
        self._task: asyncio.Task | None = None

    async def _tick(self) -> None:
        while True:
            due = time.perf_counter() + self.TICK_S
            await asyncio.sleep(self.TICK_S)
            self._lags.append(max(time.perf_counter() - due, 0.0) * 1000.0)

    def start(self) -> None:
        self._lags.clear()
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def stop(self, tokens: int, itl_ms: float | None) -> ClientLoad:
        """Stop and judge: the client set the pace if it kept a core busy or woke late compared to the token gap."""
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        cpu, wall = time.process_time() - self._cpu0, time.perf_counter() - self._wall0
        lag = distribution(self._lags)
        frac = cpu / wall if wall > 0 else 0.0
        reasons = []
        if frac >= 0.8:
            reasons.append(f"client used {frac:.0%} of a CPU core")
        limit = max(5.0, 0.25 * itl_ms) if itl_ms else 5.0
        if lag.p90 is not None and lag.p90 > limit:
            reasons.append(f"event loop woke {lag.p90:.1f} ms late at p90 (limit {limit:.1f} ms)")
        return ClientLoad(loop_lag_ms=lag, cpu_s=cpu, wall_s=wall, cpu_fraction=frac,
                          cpu_us_per_token=(cpu * 1e6 / tokens) if tokens else None,
                          client_bound=bool(reasons), reason="; ".join(reasons) or None)


# One bench process holds one connection per stream; past a few hundred it is the bottleneck itself
# (`make bench-client` measures where), and past this many it would only exhaust file descriptors.
MAX_CONCURRENCY = 4096


async def run_burst(send: Send, on_done: Done, *, requests: int, concurrency: int, stop: asyncio.Event) -> None:
    """Send ``requests`` requests, ``concurrency`` at a time; stops (dropping in-flight ones) when ``stop`` is set."""
    indices = iter(range(requests))

    async def lane() -> None:
        # Each lane takes the next index as its last request ends: at most `concurrency` in
        # flight, and only that many tasks however many requests there are.
        for i in indices:
            if stop.is_set():
                return
            raw = RawRequest(sent=time.perf_counter())
            await send(i, raw)
            on_done(i, raw)

    lanes = [asyncio.create_task(lane()) for _ in range(min(concurrency, requests))]
    await _until_done_or_stopped(lanes, stop)


async def run_sustained(send: Send, on_done: Done, *, concurrency: int, duration_s: float,
                        stop: asyncio.Event) -> tuple[float, float]:
    """Keep ``concurrency`` streams busy for ``duration_s``; returns the window (perf_counter start, end)."""
    start = time.perf_counter()
    end = start + duration_s
    counter = iter(range(10**9))

    async def lane() -> None:
        while time.perf_counter() < end:
            i = next(counter)
            raw = RawRequest(sent=time.perf_counter())
            task = asyncio.create_task(send(i, raw))
            done, _ = await asyncio.wait({task}, timeout=max(end - time.perf_counter(), 0))
            if not done:
                # The window closed with this stream running: cut it, keep its in-window tokens.
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raw.cancelled, raw.done = True, time.perf_counter()
            on_done(i, raw)

    lanes = [asyncio.create_task(lane()) for _ in range(concurrency)]
    await _until_done_or_stopped(lanes, stop)
    return start, min(end, time.perf_counter())


async def _until_done_or_stopped(tasks: list[asyncio.Task], stop: asyncio.Event) -> None:
    """Wait for every task, or cancel them all once ``stop`` is set (one wait, however many tasks)."""
    everything = asyncio.gather(*tasks, return_exceptions=True)
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({everything, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not everything.done():
            for t in tasks:
                t.cancel()
            await everything
    finally:
        stopper.cancel()