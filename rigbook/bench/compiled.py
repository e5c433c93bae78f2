"""The compiled client: the bench's streams read by a thread in C, their events folded here.

Python connects and writes each request, then hands the socket to the reader
(``rigbook/bench/_reader.c``). Its thread reads the streams at a pace that lets several streams'
events share one wake-up, frames HTTP and SSE, and stamps each event with when the kernel received
it, so a late read moves no timestamp. Every batch comes back through one eventfd on the event
loop. An event that is one token and nothing else (nearly every event) is read in C
(``_reader_events.c``) and comes back in runs, as arrays, folded by
:func:`~rigbook.openai.stream.apply_tokens`; every other event (a finish reason, an error, usage
with details, anything unusual) is parsed by :func:`~rigbook.openai.stream.apply_payload`, the
Python client's own parser. ``tests/bench/test_event_parse.py`` holds the C reading to the
parser's on real servers' events and on fuzzed ones.

The client's watch on itself needs no timer. What a late read can distort is only the timestamps of
a read that held several events of one stream, and the reader measures that window at every such
read (``ClientLoad.merged_read_worst_ms``; ``first_read_worst_ms`` for the reads that bring a
stream's first token, which bounds how far a TTFT moved; ``last_read_worst_ms`` for those that
held a stream's last token, which bounds how far a rate moved). What a late event loop can distort is when a lane's next
request goes out, so the client keeps how late it took each stream's end
(``ClientLoad.end_late_worst_ms``) and how long after a stream's end its lane's next request went
out, less the connect's handshake as the kernel measured it (``ClientLoad.next_request_late_worst_ms``).

Plain HTTP on Linux only; :func:`available` says whether the extension was built.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rigbook.bench.client import Target
from rigbook.bench.metrics import distribution
from rigbook.bench.result import ClientLoad
from rigbook.openai.stream import RawRequest, apply_payload, apply_tokens, close_request

if TYPE_CHECKING:
    from rigbook.bench._reader import Run

try:
    from rigbook.bench._reader import Reader

    BUILT = True
except ImportError:  # not built: no C compiler at install, or not Linux
    BUILT = False

_perf = time.perf_counter

# The reader's pace: a quarter of the mean gap between a stream's token events, 1 to 10 ms. A read
# then holds one event of a stream unless the reader was late by most of a gap, and the window it
# measures stays within half of the stall limit (half a gap) when it is on time.
PACE_SHARE = 0.25
PACE_MIN_S = 0.001
PACE_MAX_S = 0.010
# How long payloads may wait for the event loop: records and progress only, never timestamps
# (a stream's end is handed over at once). Each hand-over wakes the loop and costs it a run per
# stream, so fewer, larger hand-overs leave the loop more CPU for the streams; half a second keeps
# progress output timely.
FLUSH_S = 0.5


# SO_TIMESTAMPNS, and SCM_TIMESTAMPNS, its control message, share the number (asm-generic/socket.h).
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
# struct tcp_info (linux/tcp.h): tcpi_rtt (µs) at byte 68, tcpi_total_retrans at byte 100.
_TCP_INFO_LEN = 104


def handshake(sock: socket.socket) -> tuple[float, bool] | None:
    """A connected socket's round trip as the kernel measured it on the handshake (seconds), and
    whether the kernel had to send anything twice; None where ``TCP_INFO`` is not to be had."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    except OSError:
        return None
    if len(info) < _TCP_INFO_LEN:
        return None
    (rtt_us,) = struct.unpack_from("I", info, 68)
    (retransmitted,) = struct.unpack_from("I", info, 100)
    return rtt_us / 1e6, retransmitted > 0


def available() -> bool:
    """Whether the compiled reader was built into this install."""
    return BUILT


# Held open for the life of the process once kernel_stamps() has run: Linux stamps received
# packets only while some socket asks for stamps, and turns that on from a work queue a moment
# after the first one asks, so without it the first bytes of a cell's first streams could come
# unstamped each time the previous cell's sockets closed.
_keeps_stamping: socket.socket | None = None


@functools.cache
def kernel_stamps() -> bool:
    """Whether this kernel stamps what a TCP socket receives (``SO_TIMESTAMPNS``), which the
    reader's timestamps are: a few bytes over a loopback connection, asked once per process. A
    sandboxed kernel may take the option and send no stamp."""
    global _keeps_stamping
    try:
        _keeps_stamping = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        _keeps_stamping.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        with (
            socket.create_server(("127.0.0.1", 0)) as server,
            socket.create_connection(server.getsockname(), timeout=5) as client,
        ):
            client.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            peer, _ = server.accept()
            with peer:
                for _ in range(3):  # the kernel may start stamping a moment after it was asked
                    peer.sendall(b"x")
                    _, ancillary, _, _ = client.recvmsg(1, socket.CMSG_SPACE(16))
                    if any(kind == _SO_TIMESTAMPNS for _, kind, _ in ancillary):
                        return True
                    time.sleep(0.005)
    except OSError:
        return False
    return False


@dataclass
class _Open:
    raw: RawRequest
    finished: asyncio.Future
    sock: socket.socket


class CompiledClient:
    """Streams one cell's requests through the compiled reader; ``start``/``stop`` bracket the
    cell's watch, ``close`` stops the reader's thread."""

    kind = "compiled"

    def __init__(self, target: Target, stall_s: float, connect_timeout_s: float = 10.0) -> None:
        if not BUILT:
            raise RuntimeError("the compiled reader is not built (rigbook.bench._reader)")
        if target.tls:
            raise ValueError("the compiled reader speaks plain HTTP; https goes through Python")
        self.target, self.stall_s, self.connect_timeout_s = target, stall_s, connect_timeout_s
        kernel_stamps()  # keeps the kernel stamping from here on (see _keeps_stamping)
        self._reader = Reader(
            pace_share=PACE_SHARE, pace_min_s=PACE_MIN_S, pace_max_s=PACE_MAX_S, flush_s=FLUSH_S
        )
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._reader.fileno(), self._take)
        self._open: dict[int, _Open] = {}
        self._address: tuple | None = None
        self._cpu0 = self._wall0 = 0.0
        self._end_late = self._next_late = 0.0

    async def send(self, body: bytes, raw: RawRequest) -> None:
        """Stream one request into ``raw``; never raises for a failed request, it says why in
        ``raw.error``. Cancelling it stops the stream and keeps what had arrived."""
        began = _perf()
        sock = await self._connect(raw)
        if sock is None:
            return
        connected = _perf()
        request = self.target.request_bytes(body)
        # TTFT counts from the request going onto the wire, not from this client's queueing.
        raw.sent = _perf()
        if raw.after is not None:
            self._turned_over(raw.sent - raw.after, sock, connected - began)
        try:
            await self._loop.sock_sendall(sock, request)
            stream = self._reader.add(sock.fileno(), self.stall_s)
        except OSError as exc:
            sock.close()
            raw.error, raw.done = f"dropped: {type(exc).__name__}: {exc}", _perf()
            return
        except asyncio.CancelledError:
            sock.close()
            raise
        entry = _Open(raw, self._loop.create_future(), sock)
        self._open[stream] = entry
        try:
            await entry.finished
        except asyncio.CancelledError:
            taken = self._reader.cancel(stream)
            if taken is not None:
                self._fold(entry, taken[1])
            self._open.pop(stream, None)
            sock.close()
            raise

    def _turned_over(self, took: float, sock: socket.socket, connecting: float) -> None:
        # The lane's turnover less the handshake's round trip, which is the server's and the
        # network's; a handshake the kernel had to send twice (a full accept queue) took seconds
        # that are the server's, so its whole connect is excused.
        kernel = handshake(sock)
        excused = connecting if kernel is None or kernel[1] else min(kernel[0], connecting)
        self._next_late = max(self._next_late, took - excused)

    async def _connect(self, raw: RawRequest) -> socket.socket | None:
        try:
            if self._address is None:
                infos = await self._loop.getaddrinfo(
                    self.target.host, self.target.port, type=socket.SOCK_STREAM
                )
                self._address = infos[0]
            family, kind, proto, _, address = self._address
            sock = socket.socket(family, kind, proto)
        except OSError as exc:
            raw.error, raw.done = f"connect: {type(exc).__name__}: {exc}", _perf()
            return None
        sock.setblocking(False)
        try:
            await asyncio.wait_for(self._loop.sock_connect(sock, address), self.connect_timeout_s)
        except (TimeoutError, OSError) as exc:
            sock.close()
            raw.error, raw.done = f"connect: {type(exc).__name__}: {exc}", _perf()
            return None
        except asyncio.CancelledError:
            sock.close()
            raise
        return sock

    def _take(self) -> None:
        for stream, runs, ending in self._reader.take():
            entry = self._open.get(stream)
            if entry is None:
                continue
            self._fold(entry, runs)
            if ending is None and entry.raw.error is not None:
                # an in-band error or an event that is not JSON: this stream is over
                cut = self._reader.cancel(stream)
                assert cut is not None, "only this loop cancels, and take() just listed it"
                ending = cut[2]
            if ending is not None:
                self._end(stream, entry, ending)

    def _fold(self, entry: _Open, runs: list[Run]) -> None:
        raw = entry.raw
        for run in runs:
            if raw.error is not None:
                return
            if len(run) == 2:
                apply_payload(raw, run[0], run[1])
            else:
                apply_tokens(raw, *run)

    def _end(self, stream: int, entry: _Open, ending: tuple) -> None:
        status, saw_done, error, error_body, reads, ended_at = ending
        # A lane's next request waits for this: a loop late here holds the server's slot idle.
        self._end_late = max(self._end_late, _perf() - ended_at)
        raw = entry.raw
        if error is not None and raw.error is None:
            raw.error = error
        raw.reads = reads
        close_request(raw, status, error_body, saw_done, ended_at)
        del self._open[stream]
        entry.sock.close()
        if not entry.finished.done():
            entry.finished.set_result(None)

    def start(self) -> None:
        """Begin the cell's watch: the reader's figures and the process CPU from now."""
        self._reader.stats(reset=True)
        self._cpu0, self._wall0 = time.process_time(), _perf()
        self._end_late = self._next_late = 0.0

    async def stop(self) -> ClientLoad:
        """What the client did since :meth:`start`; ``judge_client`` decides if it mattered."""
        cpu, wall = time.process_time() - self._cpu0, _perf() - self._wall0
        stats = self._reader.stats(reset=True)
        lags = distribution([1000.0 * lag for lag in stats["lags"]])
        return ClientLoad(
            loop_lag_ms=lags,
            loop_lag_worst_ms=1000.0 * stats["lag_worst"] if lags.n else None,
            read_gap_worst_ms=1000.0 * stats["read_gap_worst"],
            timestamps="kernel",
            merged_read_worst_ms=1000.0 * stats["merged_worst"],
            first_read_worst_ms=1000.0 * stats["first_worst"],
            last_read_worst_ms=1000.0 * stats["last_worst"],
            end_late_worst_ms=1000.0 * self._end_late,
            next_request_late_worst_ms=1000.0 * self._next_late,
            unstamped_reads=stats["unstamped"],
            cpu_s=cpu,
            wall_s=wall,
            cpu_fraction=cpu / wall if wall > 0 else 0.0,
            client_bound=False,
        )

    def close(self) -> None:
        """Stop the reader's thread; streams still open are cut (their sockets closed)."""
        self._loop.remove_reader(self._reader.fileno())
        for stream, entry in list(self._open.items()):
            self._reader.cancel(stream)
            entry.sock.close()
            if not entry.finished.done():
                entry.finished.cancel()
        self._open.clear()
        self._reader.close()
