"""A streamed chat reply's events folded into one request's record: the one reading of them.

Every streaming client feeds this fold: the bench's Python client event by event, its compiled
reader (``rigbook/bench/_reader_events.c`` reads a plain token event in C and must do exactly what
:func:`apply_event` does, held to it by ``tests/bench/test_event_parse.py``) and the quality
commands and the bench's sessions, which also keep the reply's text. It runs once per token, so
the text is read only where a caller asks for it.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterable
from typing import Any

import orjson

_perf = time.perf_counter


class RawRequest:
    """What one stream gave, before metrics. ``times[k]`` is when the k-th token-bearing event
    arrived, ``usage[k]`` the cumulative ``completion_tokens`` it reported (-1: none) and
    ``reasoning[k]`` 1 when it carried reasoning rather than content or a tool call. ``text``,
    where a caller gives it a list, gathers the reply's content (the bench keeps none)."""

    __slots__ = (
        "after",
        "cache_n",
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
        "text",
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
        # The prompt tokens llama-server's final `timings` say it took from its cache.
        self.cache_n: int | None = None
        self.text: list[str] | None = None
        self.cancelled = False
        self.reads = 0
        # When the previous stream of this request's lane ended (the scheduler sets it): how
        # late the client turned the lane over is measured from here.
        self.after: float | None = None

    @property
    def events(self) -> int:
        """Token-bearing events received."""
        return len(self.times)


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


def _content(choices: Iterable[Any]) -> str:
    """The reply text of an event's choices (where the text is kept); content that is not a
    string is an event of the wrong shape."""
    text = ""
    for choice in choices:
        content = (choice.get("delta") or {}).get("content")
        if content is not None and type(content) is not str:
            raise ValueError(f"content is not a string: {content!r}")
        text += content or ""
    return text


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
    keep = raw.text
    content = None if keep is None else _content(data.get("choices") or ())
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
    if type(timings) is dict:
        if "draft_n" in timings:
            drafted, accepted = _count(timings["draft_n"]), _count(timings.get("draft_n_accepted"))
        cached = timings.get("cache_n")
        if type(cached) is int and cached >= 0:  # nothing below raises: the event is taken
            raw.cache_n = cached
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
    if keep is not None and content:
        keep.append(content)


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
