"""The OpenAI-compatible streaming client: one chat request, every chunk timestamped.

Tokens are counted by the server where it tells us: continuous usage in the
stream (a chunk's token count is the difference of ``completion_tokens``
between chunks), else the final usage spread evenly over the chunks, else the
labelled client fallback of one token per token-bearing chunk. Any in-band
error, dropped stream, HTTP error or stall fails the request with a reason.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import httpx

from rigbook.bench.profiles import Profile
from rigbook.endpoint.url import v1_url


@dataclass
class Chunk:
    """One token-bearing SSE chunk: arrival time, tokens it carried (once known), reasoning or content."""

    t: float
    reasoning: bool
    usage_tokens: int | None  # cumulative completion_tokens the chunk reported, if any
    tokens: float = 0.0


@dataclass
class RawRequest:
    """What the stream gave, before metrics: times on ``time.perf_counter``."""

    sent: float
    chunks: list[Chunk] = field(default_factory=list)
    done: float | None = None
    final_usage: dict | None = None
    continuous: bool = False
    finish_reason: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    reasoning_tokens_reported: int | None = None
    cancelled: bool = False


def chat_payload(profile: Profile, model: str, prompt: str, max_tokens: int) -> dict:
    """The request body: the profile's sampling, reply length held, thinking as the engines spell it."""
    body: dict = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": profile.temperature,
        "top_p": profile.top_p,
        "stream": True,
        # vLLM/SGLang send usage on every chunk with continuous_usage_stats; others ignore it.
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        # Qwen3/DeepSeek templates read enable_thinking, GLM/Kimi read thinking.
        "chat_template_kwargs": {"enable_thinking": profile.thinking, "thinking": profile.thinking},
    }
    if profile.hold_length:
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body


def _delta_kind(choice: dict) -> tuple[bool, bool]:
    """(has tokens, is reasoning) for one choice's delta."""
    delta = choice.get("delta") or {}
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    if reasoning:
        return True, True
    return bool(delta.get("content")), False


def _apply_event(raw: RawRequest, data: dict, now: float) -> None:
    if "error" in data and data["error"]:
        err = data["error"]
        raw.error = f"in_band_error: {err.get('message', err) if isinstance(err, dict) else err}"
        return
    usage = data.get("usage") or None
    choices = data.get("choices") or []
    bearing = False
    for choice in choices:
        has, reasoning = _delta_kind(choice)
        if choice.get("finish_reason"):
            raw.finish_reason = choice["finish_reason"]
        if has and not bearing:
            bearing = True
            raw.chunks.append(Chunk(t=now, reasoning=reasoning,
                                    usage_tokens=usage.get("completion_tokens") if usage else None))
    if usage:
        if bearing:
            raw.continuous = True
        raw.final_usage = usage
        raw.prompt_tokens = usage.get("prompt_tokens", raw.prompt_tokens)
        details = usage.get("completion_tokens_details") or {}
        if details.get("reasoning_tokens") is not None:
            raw.reasoning_tokens_reported = details["reasoning_tokens"]


def _stamp_sent(raw: RawRequest):
    """An httpcore trace hook that moves ``raw.sent`` to the moment the request starts onto the wire,
    so a TTFT leaves out the time this client spent queueing it behind its own other requests."""
    async def trace(event: str, info: dict) -> None:
        if event == "http11.send_request_headers.started":
            raw.sent = time.perf_counter()
    return trace


async def stream_chat(client: httpx.AsyncClient, url: str, body: dict, stall_timeout_s: float,
                      raw: RawRequest | None = None) -> RawRequest:
    """Send one streaming chat request into ``raw``; never raises for a failed request, it says why in ``error``.

    Filling a caller's ``raw`` means a stream cancelled mid-way still leaves what it received."""
    raw = raw or RawRequest(sent=time.perf_counter())
    raw.sent = time.perf_counter()
    timeout = httpx.Timeout(connect=10.0, read=stall_timeout_s, write=10.0, pool=None)
    saw_done = False
    try:
        async with client.stream("POST", v1_url(url, "chat/completions"), json=body, timeout=timeout,
                                 extensions={"trace": _stamp_sent(raw)}) as resp:
            if resp.status_code >= 400:
                text = (await resp.aread()).decode("utf-8", "replace")[:300]
                raw.error = f"http_{resp.status_code}: {text}"
                return raw
            async for line in resp.aiter_lines():
                now = time.perf_counter()
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    saw_done = True
                    break
                try:
                    data = json.loads(payload)
                except json.JSONDecodeError:
                    raw.error = f"bad_event: {payload[:120]}"
                    break
                _apply_event(raw, data, now)
                if raw.error:
                    break
    except httpx.ReadTimeout:
        raw.error = f"stalled: no data for {stall_timeout_s:g} s"
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raw.error = f"dropped: {type(exc).__name__}: {exc}"
    except httpx.ConnectError as exc:
        raw.error = f"connect: {exc}"
    except httpx.HTTPError as exc:
        raw.error = f"transport: {type(exc).__name__}: {exc}"
    raw.done = time.perf_counter()
    if raw.error is None and not saw_done and raw.finish_reason is None:
        raw.error = "dropped: stream ended without finish_reason or [DONE]"
    return raw
