"""The chat request body (``POST /v1/chat/completions``), the one place it is built.

Every command's request is one of these: the bench's streamed requests, the quality commands'
greedy ones, the smoke prompt and the one-token requests that count a chat template. A key left
at None is left out of the body, so each engine applies its own default.
"""

from __future__ import annotations

from typing import Any

import orjson

Message = dict[str, str]


def message(role: str, content: str) -> Message:
    """One message of a conversation: ``role`` is ``system``, ``user`` or ``assistant``."""
    return {"role": role, "content": content}


def chat_body(
    model: str,
    messages: str | list[Message],
    *,
    max_tokens: int,
    temperature: float,
    top_p: float | None = None,
    seed: int | None = None,
    stream: bool | None = None,
    continuous_usage: bool = False,
    thinking: bool | None = None,
    hold_length: bool = False,
) -> dict[str, Any]:
    """A chat request: ``messages`` a list, or one user message's text. A stream asks for usage
    (``continuous_usage``: on every chunk too); ``thinking`` is the switch as the chat templates
    spell it; ``hold_length`` makes the reply ``max_tokens`` long whatever the model would say."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [message("user", messages)] if isinstance(messages, str) else messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    if top_p is not None:
        body["top_p"] = top_p
    if seed is not None:
        body["seed"] = seed
    if stream is not None:
        body["stream"] = stream
    if stream:
        # vLLM/SGLang send usage on every chunk with continuous_usage_stats; others ignore it.
        body["stream_options"] = (
            {"include_usage": True, "continuous_usage_stats": True}
            if continuous_usage
            else {"include_usage": True}
        )
    if thinking is not None:
        # Qwen3/DeepSeek templates read enable_thinking, GLM/Kimi read thinking.
        body["chat_template_kwargs"] = {"enable_thinking": thinking, "thinking": thinking}
    if hold_length:
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body


def with_messages(body: dict[str, Any], messages: list[Message]) -> dict[str, Any]:
    """``body`` with other messages (a conversation so far), the rest shared with it."""
    return {**body, "messages": messages}


def with_prefix(body: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``body`` whose first message starts with ``prefix`` (a tag that makes a prompt unique)."""
    first, *rest = body["messages"]
    return {**body, "messages": [{**first, "content": prefix + first["content"]}, *rest]}


def unstreamed(body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """``body`` asked for without a stream, for ``max_tokens`` (the usage of the same prompt)."""
    single = {k: v for k, v in body.items() if k != "stream_options"}
    return single | {"stream": False, "max_tokens": max_tokens}


def encode(body: dict[str, Any]) -> bytes:
    """A request body as JSON bytes."""
    return orjson.dumps(body)
