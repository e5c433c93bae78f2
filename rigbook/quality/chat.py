"""One greedy chat request, streamed, keeping the reply text, its TTFT and the server's usage.

The events are folded by :mod:`rigbook.openai.stream`, as the bench's are; the TTFT is the first
token's, reasoning included.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from rigbook.openai.body import chat_body, unstreamed
from rigbook.openai.stream import RawRequest, apply_payload
from rigbook.openai.urls import chat_url
from rigbook.quality.result import Sampling


@dataclass
class Reply:
    """What one request gave; ``error`` says why it failed (``http_400: ...``, ``stalled``...)."""

    text: str = ""
    ttft_s: float | None = None
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    error: str | None = None
    status: int | None = None
    usage_from: str = "stream usage"


def body(model: str, message: str, sampling: Sampling) -> dict:
    """Greedy decoding as every engine spells it, usage asked for in the stream."""
    return chat_body(
        model,
        message,
        max_tokens=sampling.max_tokens,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        seed=sampling.seed,
        stream=True,
    )


async def ask(client: httpx.AsyncClient, url: str, payload: dict, stall_s: float) -> Reply:
    """Send one streaming chat request; never raises for a failed request."""
    reply = Reply()
    timeout = httpx.Timeout(connect=10.0, read=stall_s, write=60.0, pool=None)
    kept: list[str] = []
    raw = RawRequest()
    raw.text = kept  # the fold gathers the reply's content here
    try:
        async with client.stream("POST", chat_url(url), json=payload, timeout=timeout) as resp:
            if resp.status_code >= 400:
                reply.status = resp.status_code
                text = (await resp.aread()).decode("utf-8", "replace")[:400]
                reply.error = f"http_{resp.status_code}: {text}"
                return reply
            async for line in resp.aiter_lines():
                data = line[5:].strip() if line.startswith("data:") else ""
                if not data or data == "[DONE]":
                    continue
                apply_payload(raw, data.encode(), time.perf_counter())
                if raw.error:
                    break
    except httpx.ReadTimeout:
        raw.error = f"stalled: no data for {stall_s:g} s"
    except httpx.HTTPError as exc:
        raw.error = f"transport: {type(exc).__name__}: {exc}"
    reply.text, reply.finish_reason = "".join(kept), raw.finish_reason
    reply.ttft_s = raw.times[0] - raw.sent if raw.times else None
    reply.prompt_tokens, reply.error = raw.prompt_tokens, raw.error
    if reply.error is None and reply.finish_reason is None:
        # llama-cpp-python answers a prompt longer than its context with an empty 200 stream.
        reply.error = "dropped: the stream ended without a finish_reason"
    return reply


async def count_prompt(client: httpx.AsyncClient, url: str, payload: dict, stall_s: float) -> Reply:
    """The same request unstreamed, for one reply token: ``prompt_tokens`` from the server's
    usage (some servers send none in a stream), or ``error`` and ``status`` when it refused."""
    single = unstreamed(payload, max_tokens=1)
    reply = Reply(usage_from="usage of the same request, unstreamed")
    timeout = httpx.Timeout(stall_s, connect=10.0)
    endpoint = chat_url(url)
    try:
        try:
            resp = await client.post(endpoint, json=single, timeout=timeout)
        except (httpx.RemoteProtocolError, httpx.ReadError):
            # llama-cpp-python drops the kept-alive connection after an empty stream: once more,
            # on a connection of its own.
            async with httpx.AsyncClient() as fresh:
                resp = await fresh.post(endpoint, json=single, timeout=timeout)
    except httpx.HTTPError as exc:
        reply.error = f"transport: {type(exc).__name__}: {exc}"
        return reply
    if resp.status_code >= 400:
        reply.status, reply.error = resp.status_code, f"http_{resp.status_code}: {resp.text[:400]}"
        return reply
    try:
        usage = resp.json().get("usage")
    except (ValueError, AttributeError):
        usage = None
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    reply.prompt_tokens = tokens if isinstance(tokens, int) else None
    return reply
