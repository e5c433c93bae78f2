"""The streaming client's hot path: one chat request per connection, every token event timestamped.

Cost per streamed token is what limits a bench client (a client slower than the server
publishes its own limit as the server's speed), so the path from socket to timestamp is
kept short:

- an :class:`asyncio.Protocol` whose ``data_received`` does all the work, so a read wakes
  no task (an awaited stream reader costs a task switch per read);
- HTTP/1.1 parsed by ``httptools`` (the C parser uvicorn uses), chunked bodies included;
- SSE events split on bytes, each event's JSON parsed by ``orjson``;
- per request, arrays of arrival times and cumulative usage, not an object per token.

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
from array import array
from urllib.parse import urlsplit

import httptools
import orjson

from rigbook.endpoint.url import v1_url

_perf = time.perf_counter


class RawRequest:
    """What one stream gave, before metrics. ``times[k]`` is when the k-th token-bearing event
    arrived, ``usage[k]`` the cumulative ``completion_tokens`` it reported (-1: none) and
    ``reasoning[k]`` 1 when it carried reasoning rather than content or a tool call."""

    __slots__ = (
        "after",
        "cancelled",
        "continuous",
        "done",
        "draft_accepted",
        "draft_tokens",
        "error",
        "final_usage",
        "finish_reason",
        "prompt_tokens",
        "reads",
        "reasoning",
        "reasoning_tokens_reported",
        "sent",
        "times",
        "usage",
    )

    def __init__(self, sent: float | None = None) -> None:
        self.sent = _perf() if sent is None else sent
        self.times = array("d")
        self.usage = array("q")
        self.reasoning = bytearray()
        self.done: float | None = None
        self.final_usage: dict | None = None
        self.continuous = False
        self.finish_reason: str | None = None
        self.error: str | None = None
        self.prompt_tokens: int | None = None
        self.reasoning_tokens_reported: int | None = None
        # What llama-server's final `timings` say this request drafted and the target accepted.
        self.draft_tokens: int | None = None
        self.draft_accepted: int | None = None
        self.cancelled = False
        self.reads = 0
        # When the previous stream of this request's lane ended (the scheduler sets it): how
        # late the client turned the lane over is measured from here.
        self.after: float | None = None

    @property
    def events(self) -> int:
        """Token-bearing events received."""
        return len(self.times)


class Target:
    """Where the requests go: scheme, host, port and path, parsed once for the whole run."""

    def __init__(self, base_url: str, path: str = "chat/completions") -> None:
        parts = urlsplit(v1_url(base_url, path))
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


def _media(value: bytes) -> str:
    """A header's value as a message quotes it: before any parameter, trimmed, lower case, printable
    ASCII only, 60 characters at most (the compiled reader writes the same)."""
    token = value.split(b";", 1)[0].strip(b" \t").lower()[:60]
    return "".join(chr(c) if 0x21 <= c <= 0x7E else "?" for c in token)


def stream_format_fault(content_type: bytes, content_encoding: bytes) -> str | None:
    """Why a 2xx reply with these headers is no event stream the bench can time, or None.

    A compressed stream reaches the client when the compressor flushes, not when the server wrote
    each event; a reply that is not ``text/event-stream`` (a server that ignored ``stream: true``
    and sent one JSON answer) has no events to time. A reply without a Content-Type is read."""
    encoding = _media(content_encoding)
    if encoding not in ("", "identity"):
        return (
            f"stream_format: the reply is compressed (Content-Encoding: {encoding}), which holds "
            "events back until the compressor flushes"
        )
    media = _media(content_type)
    if media not in ("", "text/event-stream"):
        return f"stream_format: the reply is {media}, not an event stream (text/event-stream)"
    return None


def close_request(
    raw: RawRequest, status: int, error_body: bytes, saw_done: bool, done: float
) -> None:
    """The stream is over at ``done``: say why it failed, if it did and nothing has said so yet."""
    raw.done = done
    if raw.error is None and status >= 400:
        raw.error = f"http_{status}: {error_body.decode('utf-8', 'replace')}"
    elif raw.error is None and status == 0:
        raw.error = "dropped: the connection closed before a reply"
    elif raw.error is None and not saw_done and raw.finish_reason is None:
        raw.error = "dropped: stream ended without finish_reason or [DONE]"


def apply_payload(raw: RawRequest, payload: bytes, now: float) -> None:
    """Parse one SSE event's data (not ``[DONE]``) and fold it into ``raw``; data that is not a
    JSON object, or an object of the wrong shape, fails the request."""
    try:
        data = orjson.loads(payload)
        if type(data) is not dict:
            raise ValueError("not an object")
        apply_event(raw, data, now)
    except (ValueError, TypeError, AttributeError):  # orjson's JSONDecodeError is a ValueError
        raw.error = f"bad_event: {payload[:120].decode('utf-8', 'replace')}"


def _count(value: object) -> int | None:
    """A token count as a server reports it: a whole number, or null for none."""
    if value is None or (type(value) is int and 0 <= value < 2**63):
        return value
    raise ValueError(f"not a token count: {value!r}")


def apply_event(raw: RawRequest, data: dict, now: float) -> None:
    """Fold one parsed SSE event into ``raw``: a token-bearing event adds one entry per array.

    An event of the wrong shape (a ``choices`` that is not a list of objects, a count that is not
    a whole number...) raises ``ValueError``, ``TypeError`` or ``AttributeError`` having changed
    nothing, so the request's arrays stay of one length; :func:`apply_payload` fails the request.
    A server is input rigbook does not control."""
    err = data.get("error")
    if err:
        raw.error = f"in_band_error: {err.get('message', err) if type(err) is dict else err}"
        return
    token = -1  # what the event carries: -1 no token, 0 content, 1 reasoning
    finish = None
    for choice in data.get("choices") or ():
        delta = choice.get("delta")
        if delta and token < 0:
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            # A tool call's deltas are tokens the model generated, stamped and counted as such.
            if reasoning or delta.get("content") or delta.get("tool_calls"):
                token = 1 if reasoning else 0
        finish = choice.get("finish_reason") or finish
    if finish is not None and type(finish) is not str:
        raise ValueError(f"finish_reason is not a string: {finish!r}")
    usage = data.get("usage")
    reported = prompt = reasoning_reported = None
    if usage:
        reported = _count(usage.get("completion_tokens"))
        prompt = _count(usage.get("prompt_tokens"))
        details = usage.get("completion_tokens_details")
        reasoning_reported = _count(details.get("reasoning_tokens")) if details else None
    timings = data.get("timings")
    drafted = accepted = None
    if type(timings) is dict and "draft_n" in timings:
        drafted, accepted = _count(timings["draft_n"]), _count(timings.get("draft_n_accepted"))
    if token >= 0:
        raw.times.append(now)
        raw.reasoning.append(token)
        raw.usage.append(-1 if reported is None else reported)
    if finish:
        raw.finish_reason = finish
    if usage:
        if token >= 0:
            raw.continuous = True
        raw.final_usage = usage
        if prompt is not None:
            raw.prompt_tokens = prompt
        if reasoning_reported is not None:
            raw.reasoning_tokens_reported = reasoning_reported
    if drafted is not None:
        raw.draft_tokens, raw.draft_accepted = drafted, accepted


def apply_tokens(
    raw: RawRequest, times: bytes, reasoning: bytes, counts: bytes, usage: bytes | None
) -> None:
    """Fold a run of token events the compiled reader read itself (``_reader_events.c``) into
    ``raw``, as :func:`apply_payload` would have one by one: ``times`` (float64), ``reasoning``
    (uint8) and ``counts`` (int64, -1 for none) hold one entry per token; ``usage`` is the last
    of the run's payloads that carried usage, or None."""
    raw.times.frombytes(times)
    raw.reasoning.extend(reasoning)
    raw.usage.frombytes(counts)
    if usage is not None:
        reported = orjson.loads(usage)["usage"]
        raw.continuous = True
        raw.final_usage = reported
        raw.prompt_tokens = reported["prompt_tokens"]


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
    protocol: type[_Stream] | None = None,
) -> RawRequest:
    """Send one streaming chat request into ``raw``; never raises for a failed request, it says
    why in ``raw.error``. Cancelling it closes the connection and keeps what had arrived.
    ``protocol``: a subclass of the stream parser that reads more of each event (a session's
    reply text, rigbook.bench.workloads.sessions)."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future = loop.create_future()
    request = target.request_bytes(body)
    try:
        transport, _ = await asyncio.wait_for(
            loop.create_connection(
                lambda: (protocol or _Stream)(raw, request, finished, stall_timeout_s, reads),
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


def encode(body: dict) -> bytes:
    """A request body as JSON bytes."""
    return orjson.dumps(body)
