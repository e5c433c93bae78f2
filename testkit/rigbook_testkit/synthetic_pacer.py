"""The synthetic server's pacer: one timer per process sends the events that fall due on every stream.

A coroutine and a timer per event cost more CPU than the write itself, and at one token per event
held the server below what it must emit to outrun the client (docs/bench.md, "The synthetic
server's ceiling", has what it emits). Here one loop callback wakes when the
earliest event is due, writes each due stream's events straight to its transport and counts them
once per wake. A stream's coroutine waits only at its start, its end, and while its client is
slow to read (the transport's buffer over its high-water mark).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rigbook_testkit.synthetic_record import Counters, Served

# uvloop's timers count whole milliseconds (a delay under 0.5 ms rounds to none): an event due
# within half of one is sent now, or the timer would spin until it falls due.
SLACK_S = 0.0005


class Stream:
    """One streamed reply: its pre-rendered events, how far it is, and when the next is due."""

    __slots__ = (
        "chunks",
        "counts",
        "due",
        "factor",
        "gone",
        "k",
        "sent",
        "served",
        "stop_at",
        "transport",
        "wake",
    )

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        chunks: list[bytes],
        counts: list[int],
        served: Served,
        factor: float,
        stop_at: int,
    ) -> None:
        self.transport, self.chunks, self.counts = transport, chunks, counts
        self.served, self.factor, self.stop_at = served, factor, stop_at
        self.k = 0  # the next event
        self.sent = 0  # tokens written
        self.due = 0.0  # when the next event is due (time.perf_counter)
        self.gone = False  # the client closed the connection
        self.wake: asyncio.Future[None] | None = None

    @property
    def finished(self) -> bool:
        """Every event written, or as many tokens as the stream is to send before a fault."""
        return self.k == len(self.chunks) or self.sent >= self.stop_at


class Pacer:
    """Sends the events of every stream of one server process at their due times."""

    def __init__(self, rate: Callable[[], float], counters: Counters) -> None:
        self._rate = rate
        self._counters = counters
        self._heap: list[tuple[float, int, Stream]] = []
        self._order = itertools.count()  # breaks ties in the heap without comparing streams
        self._timer: asyncio.TimerHandle | None = None
        self._wake_at = 0.0

    async def run(self, stream: Stream, writer: asyncio.StreamWriter) -> None:
        """Send the stream's events from now on; returns when it is finished or its client gone."""
        loop = asyncio.get_running_loop()
        stream.due = time.perf_counter()
        while True:
            stream.wake = loop.create_future()
            self._push(stream)
            await stream.wake
            if stream.finished or stream.gone:
                return
            # The client reads slower than the pace: wait until it has taken the backlog in, as
            # a server's blocking write would.
            await writer.drain()

    def _push(self, stream: Stream) -> None:
        heapq.heappush(self._heap, (stream.due, next(self._order), stream))
        if self._timer is None or stream.due < self._wake_at:
            self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._wake_at = self._heap[0][0]
        self._timer = asyncio.get_running_loop().call_later(
            max(self._wake_at - time.perf_counter(), 0.0), self._tick
        )

    def _tick(self) -> None:
        self._timer = None
        now = time.perf_counter()
        heap, tokens, writes = self._heap, 0, 0
        while heap and heap[0][0] <= now + SLACK_S:
            stream = heapq.heappop(heap)[2]
            if stream.finished or stream.transport.is_closing():
                stream.gone = not stream.finished
                _wake(stream)
                continue
            try:
                tokens += self._send(stream, now)
            except (ConnectionError, RuntimeError):
                # The client went between the check and the write (uvloop raises RuntimeError
                # for a closed handle); the other streams go on.
                stream.gone = True
                _wake(stream)
                continue
            writes += 1
            high = stream.transport.get_write_buffer_limits()[1]
            if stream.transport.get_write_buffer_size() > high:
                _wake(stream)  # its coroutine waits for the client, then pushes it again
            else:
                heapq.heappush(heap, (stream.due, next(self._order), stream))
        if writes:
            self._counters.add_tokens(tokens, writes)
        if heap:
            self._schedule()

    def _send(self, stream: Stream, now: float) -> int:
        """Write every event of the stream that is due (at least one) in one write; returns the
        tokens written. A server that fell behind catches up in one system call, not one per
        event."""
        counts, k = stream.counts, stream.k
        j, due, sent = k, stream.due, stream.sent
        while j < len(counts) and (j == k or due <= now) and sent < stream.stop_at:
            due += counts[j] / (self._rate() * stream.factor)
            sent += counts[j]
            j += 1
        stream.transport.write(b"".join(stream.chunks[k:j]) if j > k + 1 else stream.chunks[k])
        written = time.perf_counter()
        served = stream.served
        for i in range(k, j):
            served.times.append(written)
            served.counts.append(counts[i])
        if k == 0:
            self._counters.add_request(served.prompt_tokens, written - served.arrival)
        tokens = sent - stream.sent
        stream.k, stream.due, stream.sent = j, due, sent
        return tokens


def _wake(stream: Stream) -> None:
    if stream.wake is not None and not stream.wake.done():
        stream.wake.set_result(None)
