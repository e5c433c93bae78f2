"""Schedulers: how requests are put in flight, and the client's watch on itself.

burst: N requests, at most C in flight; a new one starts as soon as one ends.
sustained: C streams kept in flight for S seconds; at the window's end the
streams still running are cut, and only tokens that arrived inside the window
count toward the aggregate.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from array import array
from collections.abc import Callable, Coroutine
from typing import Any

from rigbook.bench.client import ReadWatch
from rigbook.bench.metrics import concurrency_reached, distribution
from rigbook.bench.result import ClientLoad, ClientMoved, RequestRecord
from rigbook.openai.stream import RawRequest

# send(i, raw) streams request i into ``raw``, so a stream cut mid-way keeps what it received.
Send = Callable[[int, RawRequest], Coroutine[Any, Any, None]]
Done = Callable[[int, RawRequest], None]


class ClientMonitor:
    """The client's watch on itself during a cell.

    A ticker callback on the loop measures two things per interval between its wakes while a
    stream is open: how late it woke (a lower bound of any stall inside the interval) and the
    interval itself (an upper bound: the loop runs the ticker whenever it is free, so no stall is
    longer than the interval that holds it). Its period follows the streams: a quarter of the
    stall limit the gaps between reads imply (:data:`TICK_SHARE`), between 1 ms (uvloop's timer
    resolution) and 5 ms, so any stall longer than the limit is seen as one, and a stall shorter
    than three quarters of it never is. It also takes the longest silence between reads while
    streams were open, and the process CPU time."""

    TICK_MIN_S = 0.001
    TICK_MAX_S = 0.005

    def __init__(self, reads: ReadWatch | None = None) -> None:
        self._lags = array("d")
        self._reads = reads
        self._handle: asyncio.TimerHandle | None = None
        self._worst_bound = 0.0
        # (lag ms, CPU ms the process used beyond the tick) of the longest interval
        self._worst = (0.0, 0.0)

    def _period(self) -> float:
        gap = self._reads.gap_s if self._reads is not None else 0.0
        return min(self.TICK_MAX_S, max(self.TICK_MIN_S, TICK_SHARE * STALL_SHARE * gap))

    def _schedule(self, now: float) -> None:
        period = self._period()
        reads = self._reads
        self._set, self._due, self._cpu_set = now, now + period, time.process_time()
        self._was_open = reads is None or reads.open > 0
        loop = asyncio.get_running_loop()
        self._handle = loop.call_at(loop.time() + period, self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        reads = self._reads
        # An interval counts only when a stream was open as it began or as it ended: a stall with
        # nothing to read distorts nothing.
        if self._was_open or (reads is not None and reads.open):
            lag = max(now - self._due, 0.0) * 1000.0
            self._lags.append(lag)
            interval = (now - self._set) * 1000.0
            if interval > self._worst_bound:
                # How much of it this process spent on a CPU: little means the machine did not
                # schedule it (or it was blocked), much means the client itself was busy.
                period = (self._due - self._set) * 1000.0
                cpu = (time.process_time() - self._cpu_set) * 1000.0
                self._worst_bound, self._worst = interval, (lag, max(0.0, cpu - period))
        self._schedule(now)

    def start(self) -> None:
        self._lags = array("d")
        self._worst_bound, self._worst = 0.0, (0.0, 0.0)
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self._schedule(self._wall0)

    async def stop(self) -> ClientLoad:
        """Stop the ticker and say what the client did; :func:`judge_client` decides if it mattered."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        cpu, wall = time.process_time() - self._cpu0, time.perf_counter() - self._wall0
        lag = distribution(self._lags)
        worst_read = 1000.0 * self._reads.worst if self._reads is not None else None
        return ClientLoad(
            loop_lag_ms=lag,
            loop_lag_worst_ms=lag.max,
            stall_worst_bound_ms=self._worst_bound if lag.n else None,
            worst_stall_cpu_ms=self._worst[1],
            read_gap_worst_ms=worst_read,
            cpu_s=cpu,
            wall_s=wall,
            cpu_fraction=cpu / wall if wall > 0 else 0.0,
            client_bound=False,
        )


# A stall longer than this share of the inter-token gap moves token timestamps by a visible
# part of a gap; the floor is the ticker's own resolution. It sets the ticker's period.
STALL_SHARE = 0.5
STALL_FLOOR_MS = 2.0
# The ticker's period as a share of the stall limit: stalls between (1 - TICK_SHARE) x limit and
# the limit may be flagged, and every longer one is.
TICK_SHARE = 0.25
# How far the client may have moved a figure, as a share of it, before the figure is marked.
TOLERANCE = 0.01
# A share with no bound (a lag as long as a reply's whole span could have made its rate anything) is
# written as this, a number JSON can hold.
UNBOUNDED = 100.0
# The figures whose mark takes the cell's perf point away (client_bound); a marked TTFT or
# per-token gap leaves the rates standing.
RATES = ("aggregate_tok_s", "per_request_decode_tok_s")
# The figures a perf point publishes: a mark on one of them is warned of (W_CLIENT_BOUND); a mark
# on the per-token gaps only is kept in the cell.
PUBLISHED = (*RATES, "ttft_ms")


def warned(load: ClientLoad) -> bool:
    """Whether the cell's W_CLIENT_BOUND is due: a published figure is marked."""
    return any(name in PUBLISHED for name in load.marked)


def stall_limit_ms(itl_ms: float | None) -> float:
    """Half the median gap between a stream's events (at least the ticker's floor): the ticker's
    period is a share of it, and per-token gaps move by a visible part of a gap past it."""
    return max(STALL_FLOOR_MS, STALL_SHARE * itl_ms) if itl_ms else STALL_FLOOR_MS


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _rate_moved(counted: list[RequestRecord], early_ms: float, late_ms: float) -> float | None:
    """How far the median per-request rate may be from the truth when each request's first token
    may have been stamped up to ``early_ms`` late and its last up to ``late_ms`` late: the true
    span is the measured one less up to ``late_ms`` or plus up to ``early_ms``."""
    rates, low, high = [], [], []
    for r in counted:
        if r.decode_tok_s is None or r.first_token_s is None or r.last_token_s is None:
            continue
        span = (r.last_token_s - r.first_token_s) * 1000.0
        tokens = r.decode_tok_s * span
        rates.append(r.decode_tok_s)
        low.append(tokens / (span + early_ms))
        high.append(tokens / (span - late_ms) if span > late_ms else math.inf)
    mid, lo, hi = _median(rates), _median(low), _median(high)
    if not mid or lo is None or hi is None:
        return None
    return max(mid - lo, hi - mid) / mid


def moved_by_client(
    records: list[RequestRecord],
    *,
    first_ms: float,
    last_ms: float,
    token_ms: float,
    turnover_ms: float,
) -> ClientMoved:
    """Per figure, how far the client could have moved it, as a share of it. ``first_ms`` bounds
    how late a stream's first token was stamped, ``last_ms`` its last (where a rate ends),
    ``token_ms`` any other, and ``turnover_ms`` how late a lane's next request went out after its
    stream ended (which idles the server's slot)."""
    counted = [r for r in records if r.ok or r.cut_at_window]
    ttft = _median(
        [1000.0 * (r.first_token_s - r.sent_s) for r in counted if r.first_token_s is not None]
    )
    ends = [r.last_token_s for r in counted if r.last_token_s is not None]
    span = 1000.0 * (max(ends) - min(r.sent_s for r in counted)) if ends else None
    # Each lane turned over this many times at most; every turnover may have idled its slot.
    lanes = concurrency_reached(records) or 1
    turnovers = max(0, math.ceil(len(records) / lanes) - 1)
    itl_p99 = max((r.itl_ms.p99 for r in counted if r.itl_ms.p99), default=None)
    # A burst's span ends on its last token; a sustained window counts every token stamped inside
    # it, so any late stamp may move a token across its end.
    end_ms = max(last_ms, token_ms) if any(r.cut_at_window for r in records) else last_ms
    shares = {
        "aggregate_tok_s": (end_ms + turnovers * turnover_ms) / span if span else None,
        "per_request_decode_tok_s": _rate_moved(counted, first_ms, last_ms),
        "ttft_ms": first_ms / ttft if ttft else None,
        "itl_ms_worst_p99": max(first_ms, last_ms, token_ms) / itl_p99 if itl_p99 else None,
    }
    return ClientMoved(
        **{name: None if v is None else min(v, UNBOUNDED) for name, v in shares.items()}
    )


def judge_client(load: ClientLoad, records: list[RequestRecord]) -> ClientLoad:
    """Decide, per figure of the cell, whether the client could have moved it by more than
    :data:`TOLERANCE`, and mark those (``marked``); the cell is ``client_bound`` (no perf point)
    only when its aggregate or per-request rate is marked. How busy its CPU was decides nothing by
    itself: a busy client that kept up moved no timestamp.

    Only a cell that streamed tokens can have been limited by its client: when the server
    failed every request, the client was idle, not the bottleneck."""
    tokens = sum(r.output_tokens for r in records if r.ok or r.cut_at_window)
    # The gap that matters is between reads of one stream: with several tokens per event a
    # stall moves one event's timestamp, against the gap between events.
    gaps = sorted(
        (r.last_token_s - r.first_token_s) / (r.chunks - 1) * 1000.0
        for r in records
        if r.chunks > 1 and r.first_token_s is not None and r.last_token_s is not None
    )
    itl = gaps[len(gaps) // 2] if gaps else None
    per_token = load.cpu_s * 1e6 / tokens if tokens else None
    update: dict = {"cpu_us_per_token": per_token, "stall_limit_ms": stall_limit_ms(itl)}
    if not tokens:
        return load.model_copy(update={**update, "client_bound": False, "reason": None})
    causes = []
    if load.timestamps == "kernel":
        # Kernel stamps: a late read moves a token's stamp only when it held the token and later
        # bytes of its stream, and then by at most the window it measured (the read that brought
        # the first token apart, for the TTFT); a late loop delays a lane's next request, which
        # the turnover measures. A stream's end taken late (end_late_worst_ms) moves nothing by
        # itself: its end time is the reader's, and a lane with a next request shows the delay in
        # its turnover.
        first = load.first_read_worst_ms or 0.0
        token = load.merged_read_worst_ms or 0.0
        # Results from before the last token's read was measured apart: any merged read's window.
        last = load.last_read_worst_ms if load.last_read_worst_ms is not None else token
        turnover = load.next_request_late_worst_ms or 0.0
        moved = moved_by_client(
            records, first_ms=first, last_ms=last, token_ms=token, turnover_ms=turnover
        )
        if first:
            causes.append(f"a read held a stream's first token and later bytes ({first:.1f} ms)")
        if last:
            causes.append(f"a read held a stream's last token and later bytes ({last:.1f} ms)")
        if token:
            causes.append(f"a read held a token and later bytes of its stream ({token:.1f} ms)")
        if turnover:
            causes.append(f"a lane's next request went out up to {turnover:.1f} ms late")
    else:
        # Stamped as read: every stamp is up to the longest stall late, and so is each next
        # request. The longest stall is at most the longest interval between the ticker's wakes
        # (results measured before that bound was kept have only the ticker's lateness).
        stall = load.stall_worst_bound_ms
        if stall is None:
            stall = load.loop_lag_worst_ms or 0.0
        moved = moved_by_client(
            records, first_ms=stall, last_ms=stall, token_ms=stall, turnover_ms=stall
        )
        busy = load.worst_stall_cpu_ms
        cause = (
            ""
            if busy is None
            else "; it was busy on a CPU"
            if busy >= 0.5 * stall
            else f"; it ran only {busy:.0f} ms of it: blocked, or the machine did not schedule it"
        )
        causes.append(
            f"client stalled up to {stall:.1f} ms (at least {load.loop_lag_worst_ms or 0:.1f} ms"
            f"{cause})"
        )
    bounds = moved.model_dump()
    if load.timestamps == "kernel" and load.unstamped_reads:
        # Stamped when the reader woke, which nothing here bounds: every figure is in doubt.
        marked = [name for name, share in bounds.items() if share is not None]
        reasons = [
            f"{load.unstamped_reads} reads came without the kernel's receive stamp, so their "
            "events carry when the reader woke, which this client does not bound (this "
            "kernel: use --client python)"
        ]
    else:
        marked = [name for name, share in bounds.items() if share is not None and share > TOLERANCE]
        reasons = (
            [
                "the client could have moved "
                + ", ".join(
                    f"{name} without bound"
                    if bounds[name] >= UNBOUNDED
                    else f"{name} by up to {bounds[name]:.1%}"
                    for name in marked
                )
                + f" (tolerance {TOLERANCE:.0%}): "
                + "; ".join(causes)
            ]
            if marked
            else []
        )
    return load.model_copy(
        update={
            **update,
            "moved": moved,
            "marked": marked,
            "client_bound": any(name in RATES for name in marked),
            "reason": "; ".join(reasons) or None,
        }
    )


# One bench process holds one connection per stream; past a few hundred it is the bottleneck itself
# (`make bench-client` measures where), and past this many it would only exhaust file descriptors.
MAX_CONCURRENCY = 4096


async def run_burst(
    send: Send, on_done: Done, *, requests: int, concurrency: int, stop: asyncio.Event
) -> None:
    """Send ``requests`` requests, ``concurrency`` at a time; stops (dropping in-flight ones) when ``stop`` is set."""
    indices = iter(range(requests))

    async def lane() -> None:
        # Each lane takes the next index as its last request ends: at most `concurrency` in
        # flight, and only that many tasks however many requests there are.
        after = None
        for i in indices:
            if stop.is_set():
                return
            raw = RawRequest()
            raw.after = after
            await send(i, raw)
            on_done(i, raw)
            after = raw.done

    lanes = [asyncio.create_task(lane()) for _ in range(min(concurrency, requests))]
    await until_done_or_stopped(lanes, stop)


async def run_sustained(
    send: Send, on_done: Done, *, concurrency: int, duration_s: float, stop: asyncio.Event
) -> tuple[float, float]:
    """Keep ``concurrency`` streams busy for ``duration_s``; returns the window (perf_counter start, end)."""
    start = time.perf_counter()
    end = start + duration_s
    counter = iter(range(10**9))

    async def lane() -> None:
        after = None
        while time.perf_counter() < end:
            i = next(counter)
            raw = RawRequest()
            raw.after = after
            task = asyncio.create_task(send(i, raw))
            done, _ = await asyncio.wait({task}, timeout=max(end - time.perf_counter(), 0))
            if not done:
                # The window closed with this stream running: cut it, keep its in-window tokens.
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raw.cancelled, raw.done = True, time.perf_counter()
                on_done(i, raw)
                return  # the timer may fire a hair before `end` on the perf clock: no new stream
            on_done(i, raw)
            after = raw.done

    lanes = [asyncio.create_task(lane()) for _ in range(concurrency)]
    await until_done_or_stopped(lanes, stop)
    return start, min(end, time.perf_counter())


async def until_done_or_stopped(tasks: list[asyncio.Task], stop: asyncio.Event) -> None:
    """Wait for every task, or cancel them all once ``stop`` is set (one wait, however many tasks)."""
    everything = asyncio.gather(*tasks, return_exceptions=True)
    stopper = asyncio.create_task(stop.wait())
    waiters: set[asyncio.Future[Any]] = {everything, stopper}
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if not everything.done():
            for t in tasks:
                t.cancel()
            await everything
    finally:
        stopper.cancel()
