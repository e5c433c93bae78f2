"""The streaming client's hot path: one chat request per connection, every token event timestamped.

Cost per streamed token is what limits a bench client (a client slower than the server
publishes its own limit as the server's speed), so the path from socket to timestamp is
kept short:

- an :class:`asyncio.Protocol` whose ``data_received`` does all the work, so a read wakes
  no task (an awaited stream reader costs a task switch per read);
- HTTP/1.1 parsed by ``httptools`` (the C parser uvicorn uses), chunked bodies included;
- SSE events split on bytes, each event's data folded by :mod:`rigbook.openai.stream` (``orjson``,
  then per request arrays of arrival times and cumulative usage, not an object per token).

Times are ``time.perf_counter()``: on Linux that is ``CLOCK_MONOTONIC``, one clock for the
whole machine, so records of several client processes merge exactly.

Tokens are counted by the server where it tells us: continuous usage in the stream, else
the final usage, else a labelled client count (see :func:`rigbook.bench.metrics.attribute_tokens`).
Any in-band error, dropped stream, HTTP error or stall fails the request with a reason.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from urllib.parse import urlsplit

import httptools

from rigbook.openai.stream import RawRequest, apply_payload, close_request, stream_format_fault
from rigbook.openai.urls import chat_url

_perf = time.perf_counter


class Target:
    """Where the requests go (the server's chat completions): scheme, host, port and path, parsed
    once for the whole run."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(chat_url(base_url))
        self.host = parts.hostname or "127.0.0.1"
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.path = parts.path or "/"
        default_port = (self.tls and self.port == 443) or (not self.tls and self.port == 80)
        self.host_header = self.host if default_port else f"{self.host}:{self.port}"
        self.ssl = ssl.create_default_context() if self.tls else None

    def request_bytes(self, body: bytes) -> bytes:
        """One POST with the JSON body; the server closes the connection after the reply."""
        return (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host_header}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            # A compressed stream is held back by the compressor's buffer: ask for none.
            f"Accept-Encoding: identity\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode("ascii") + body


class _Stream(asyncio.Protocol):
    """One request's connection: parses the reply as it arrives and fills a RawRequest."""

    def __init__(
        self,
        raw: RawRequest,
        request: bytes,
        finished: asyncio.Future,
        stall_s: float,
        reads: ReadWatch | None,
    ) -> None:
        self.raw, self.request, self.finished, self.stall_s, self.watch = (
            raw,
            request,
            finished,
            stall_s,
            reads,
        )
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.status = 0
        self.pending = b""
        self.error_body = b""
        self.saw_done = False
        self.after_cr = False  # the body's last byte was a CR: an LF next ends no other line
        self.content_type = self.content_encoding = b""
        self.last_read = self._now = 0.0
        self.timer: asyncio.TimerHandle | None = None

    # transport callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        now = _perf()
        # TTFT counts from the request going onto the wire, not from this client's queueing.
        self.raw.sent = self.last_read = now
        transport.write(self.request)  # type: ignore[attr-defined]
        self.timer = asyncio.get_running_loop().call_at(
            _loop_time(now + self.stall_s), self._check_stall
        )

    def data_received(self, data: bytes) -> None:
        now = _perf()
        if self.watch is not None:
            # The first read's gap holds the TTFT; the others are this stream's pace.
            self.watch.saw(now, now - self.last_read if self.raw.reads else 0.0)
        self.raw.reads += 1
        self.last_read = now
        self._now = now
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(f"dropped: bad HTTP from the server: {exc}")

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished.done():
            if exc is not None and self.raw.error is None:
                self.raw.error = f"dropped: {type(exc).__name__}: {exc}"
            self._finish()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-type":
            self.content_type = value
        elif name == b"content-encoding":
            self.content_encoding = value

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if 200 <= self.status < 300:
            why = stream_format_fault(self.content_type, self.content_encoding)
            if why is not None:
                self._fail(why)

    def on_body(self, body: bytes) -> None:
        if self.raw.error is not None or self.finished.done():
            return
        if self.status >= 400:
            self.error_body += body[:300]
            return
        # CR, LF and CRLF each end a line (SSE): every CR becomes an LF, and an LF right after a
        # CR, in this read or the next, is the same line end.
        if self.after_cr and body[:1] == b"\n":
            body = body[1:]
        self.after_cr = False
        if b"\r" in body:
            self.after_cr = body.endswith(b"\r")
            body = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self.pending + body if self.pending else body
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            self._event(buf[start:end])
            start = end + 2
            if self.raw.error is not None or self.saw_done:
                self._close()
                return
        self.pending = buf[start:]

    def on_message_complete(self) -> None:
        if 100 <= self.status < 200:  # an interim reply (100 Continue): the real one follows
            return
        self._close()

    # work
    def _event(self, event: bytes) -> None:
        if event.startswith(b"data: ") and b"\n" not in event:
            payload = event[6:]
        else:  # several lines, comments or fields other than data
            lines = [ln[5:].lstrip(b" ") for ln in event.split(b"\n") if ln.startswith(b"data:")]
            if not lines:
                return
            payload = b"\n".join(lines)
        if payload == b"[DONE]":
            self.saw_done = True
            return
        apply_payload(self.raw, payload, self._now)

    def _check_stall(self) -> None:
        if self.finished.done():
            return
        due = self.last_read + self.stall_s
        if _perf() >= due:
            self._fail(f"stalled: no data for {self.stall_s:g} s")
        else:
            self.timer = asyncio.get_running_loop().call_at(_loop_time(due), self._check_stall)

    def _fail(self, why: str) -> None:
        if self.raw.error is None:
            self.raw.error = why
        self._close()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._finish()

    def _finish(self) -> None:
        if self.finished.done():
            return
        if self.timer is not None:
            self.timer.cancel()
        close_request(self.raw, self.status, self.error_body, self.saw_done, _perf())
        self.finished.set_result(None)


def _loop_time(perf_t: float) -> float:
    """A perf_counter time on the loop's clock (both are CLOCK_MONOTONIC here, but say so once)."""
    return asyncio.get_running_loop().time() + (perf_t - _perf())


class ReadWatch:
    """The reads of a cell's streams: the longest gap between two reads of any stream while
    streams were open (a client that stops reading shows here, and so does a server pause), and
    ``gap_s``, a running mean of the gap between two reads of one stream, which sets how finely
    :class:`~rigbook.bench.scheduler.ClientMonitor` watches the loop."""

    __slots__ = ("gap_s", "last", "open", "worst")

    def __init__(self) -> None:
        self.last: float | None = None
        self.worst = 0.0
        self.open = 0
        self.gap_s = 0.0

    def saw(self, now: float, stream_gap: float = 0.0) -> None:
        if self.last is not None and now - self.last > self.worst:
            self.worst = now - self.last
        self.last = now
        if stream_gap > 0.0:
            self.gap_s = (
                stream_gap if self.gap_s == 0.0 else self.gap_s + 0.05 * (stream_gap - self.gap_s)
            )

    def opened(self) -> None:
        if self.open == 0:
            self.last = _perf()
        self.open += 1

    def closed(self) -> None:
        self.open -= 1
        if self.open == 0:
            self.last = None


async def stream_chat(
    target: Target,
    body: bytes,
    stall_timeout_s: float,
    raw: RawRequest,
    connect_timeout_s: float = 10.0,
    reads: ReadWatch | None = None,
) -> RawRequest:
    """Send one streaming chat request into ``raw``; never raises for a failed request, it says
    why in ``raw.error``. Cancelling it closes the connection and keeps what had arrived."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future = loop.create_future()
    request = target.request_bytes(body)
    try:
        transport, _ = await asyncio.wait_for(
            loop.create_connection(
                lambda: _Stream(raw, request, finished, stall_timeout_s, reads),
                target.host,
                target.port,
                ssl=target.ssl,
            ),
            connect_timeout_s,
        )
    except (TimeoutError, OSError) as exc:
        raw.error = f"connect: {type(exc).__name__}: {exc}"
        raw.done = _perf()
        return raw
    if reads is not None:
        reads.opened()
    try:
        await finished
    except asyncio.CancelledError:
        transport.close()
        raise
    finally:
        if reads is not None:
            reads.closed()
    return raw
