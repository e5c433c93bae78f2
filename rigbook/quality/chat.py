"""One greedy chat request, streamed, keeping the reply text, its TTFT and the server's usage."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import httpx

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
    return {
        "model": model,
        "messages": [{"role": "user", "content": message}],
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "seed": sampling.seed,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def _take(reply: Reply, data: object, sent: float) -> None:
    """Fold one event into ``reply``; an event of the wrong shape (a server is input rigbook does
    not control) raises ``ValueError``, ``TypeError`` or ``AttributeError``."""
    if type(data) is not dict:
        raise ValueError("not an object")
    if data.get("error"):
        err = data["error"]
        reply.error = f"in_band_error: {err.get('message', err) if isinstance(err, dict) else err}"
        return
    for choice in data.get("choices") or []:
        text = (choice.get("delta") or {}).get("content") or ""
        finish = choice.get("finish_reason")
        if type(text) is not str or (finish is not None and type(finish) is not str):
            raise ValueError("content and finish_reason are strings")
        if text and reply.ttft_s is None:
            reply.ttft_s = time.perf_counter() - sent
        reply.text += text
        reply.finish_reason = finish or reply.finish_reason
    usage = data.get("usage") or {}
    if isinstance(usage.get("prompt_tokens"), int):
        reply.prompt_tokens = usage["prompt_tokens"]


async def ask(client: httpx.AsyncClient, url: str, payload: dict, stall_s: float) -> Reply:
    """Send one streaming chat request; never raises for a failed request."""
    reply = Reply()
    timeout = httpx.Timeout(connect=10.0, read=stall_s, write=60.0, pool=None)
    sent = time.perf_counter()
    try:
        async with client.stream(
            "POST", url + "/v1/chat/completions", json=payload, timeout=timeout
        ) as resp:
            if resp.status_code >= 400:
                reply.status = resp.status_code
                text = (await resp.aread()).decode("utf-8", "replace")[:400]
                reply.error = f"http_{resp.status_code}: {text}"
                return reply
            async for line in resp.aiter_lines():
                payload_text = line[5:].strip() if line.startswith("data:") else ""
                if not payload_text or payload_text == "[DONE]":
                    continue
                try:
                    _take(reply, json.loads(payload_text), sent)
                except (ValueError, TypeError, AttributeError):  # JSONDecodeError is a ValueError
                    reply.error = f"bad_event: {payload_text[:120]}"
                if reply.error:
                    break
    except httpx.ReadTimeout:
        reply.error = f"stalled: no data for {stall_s:g} s"
    except httpx.HTTPError as exc:
        reply.error = f"transport: {type(exc).__name__}: {exc}"
    if reply.error is None and reply.finish_reason is None:
        # llama-cpp-python answers a prompt longer than its context with an empty 200 stream.
        reply.error = "dropped: the stream ended without a finish_reason"
    return reply


async def count_prompt(client: httpx.AsyncClient, url: str, payload: dict, stall_s: float) -> Reply:
    """The same request unstreamed, for one reply token: ``prompt_tokens`` from the server's
    usage (some servers send none in a stream), or ``error`` and ``status`` when it refused."""
    single = {k: v for k, v in payload.items() if k != "stream_options"}
    single |= {"stream": False, "max_tokens": 1}
    reply = Reply(usage_from="usage of the same request, unstreamed")
    timeout = httpx.Timeout(stall_s, connect=10.0)
    try:
        try:
            resp = await client.post(url + "/v1/chat/completions", json=single, timeout=timeout)
        except (httpx.RemoteProtocolError, httpx.ReadError):
            # llama-cpp-python drops the kept-alive connection after an empty stream: once more,
            # on a connection of its own.
            async with httpx.AsyncClient() as fresh:
                resp = await fresh.post(url + "/v1/chat/completions", json=single, timeout=timeout)
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
