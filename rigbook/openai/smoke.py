"""The smoke test: is the model served, and does it answer one short prompt?

The same two requests the guide makes with curl: ``GET /v1/models`` and one
``POST /v1/chat/completions`` at temperature 0.
"""

from __future__ import annotations

import time

import httpx
from pydantic import BaseModel

from rigbook.errors import EndpointError
from rigbook.openai.body import chat_body
from rigbook.openai.http import BODY_EXCERPT, json_object, request
from rigbook.openai.models import discover, pick_model
from rigbook.openai.urls import base_url, chat_url

SMOKE_PROMPT = "Say READY in one word."


class SmokeResult(BaseModel):
    """What the smoke test saw."""

    url: str
    model: str
    served: list[str]
    reply: str
    seconds: float
    completion_tokens: int | None = None


def smoke(url: str, model: str | None = None, *, timeout: float = 120.0) -> SmokeResult:
    """Check ``model`` is served at ``url`` (default: the first listed) and that it answers the
    smoke prompt."""
    base = base_url(url)
    served = discover(base, timeout=min(timeout, 10.0)).models
    chosen = pick_model(base, served, model)
    body = chat_body(chosen, SMOKE_PROMPT, max_tokens=32, temperature=0)
    endpoint = chat_url(base)
    started = time.monotonic()
    with httpx.Client(timeout=timeout) as client:
        data = json_object(request(client, "POST", endpoint, json=body), endpoint)
    seconds = time.monotonic() - started
    choices = data.get("choices") or []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    reply = (message or {}).get("content") or ""
    if not reply.strip():
        raise EndpointError(
            "E_EMPTY_REPLY",
            f"{chosen} at {base} answered an empty reply: {str(data)[:BODY_EXCERPT]}",
        )
    usage = data.get("usage") or {}
    return SmokeResult(
        url=base,
        model=chosen,
        served=served,
        reply=reply.strip(),
        seconds=round(seconds, 3),
        completion_tokens=usage.get("completion_tokens"),
    )
