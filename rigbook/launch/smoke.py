"""The smoke test: is the model served, and does it answer one short prompt?

The same two requests the guide makes with curl: ``GET /v1/models`` and one
``POST /v1/chat/completions`` at temperature 0.
"""

from __future__ import annotations

import time

import httpx
from pydantic import BaseModel

from rigbook.errors import EndpointError

SMOKE_PROMPT = "Say READY in one word."
BODY_EXCERPT = 300


class SmokeResult(BaseModel):
    """What the smoke test saw."""

    url: str
    model: str
    served: list[str]
    reply: str
    seconds: float
    completion_tokens: int | None = None


def _base(url: str) -> str:
    base = url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _request(client: httpx.Client, method: str, url: str, **kwargs) -> httpx.Response:
    try:
        response = client.request(method, url, **kwargs)
    except (httpx.ConnectError, httpx.TimeoutException) as exc:
        raise EndpointError("E_CONNECT", f"{method} {url}: {type(exc).__name__}: {exc}") from None
    except httpx.HTTPError as exc:
        raise EndpointError("E_CONNECT", f"{method} {url}: {exc}") from None
    if response.status_code >= 400:
        body = response.text[:BODY_EXCERPT].strip()
        raise EndpointError("E_HTTP", f"{method} {url} answered HTTP {response.status_code}: {body}")
    return response


def _json(response: httpx.Response, what: str) -> dict:
    try:
        data = response.json()
    except ValueError:
        raise EndpointError("E_HTTP", f"{what} did not answer JSON: {response.text[:BODY_EXCERPT]!r}") from None
    if not isinstance(data, dict):
        raise EndpointError("E_HTTP", f"{what} answered {type(data).__name__}, not a JSON object")
    return data


def served_models(url: str, *, timeout: float = 10.0) -> list[str]:
    """The model ids the endpoint lists at ``/v1/models``."""
    with httpx.Client(timeout=timeout) as client:
        data = _json(_request(client, "GET", f"{_base(url)}/v1/models"), "/v1/models")
    return [str(m.get("id")) for m in data.get("data") or [] if isinstance(m, dict) and m.get("id")]


def smoke(url: str, model: str | None = None, *, timeout: float = 120.0) -> SmokeResult:
    """Check ``model`` is served at ``url`` (default: the first listed) and that it answers the smoke prompt."""
    base = _base(url)
    served = served_models(base, timeout=min(timeout, 10.0))
    if not served:
        raise EndpointError("E_MODEL_ID", f"{base}/v1/models lists no models")
    chosen = model or served[0]
    if chosen not in served:
        raise EndpointError("E_MODEL_ID", f"model {chosen!r} is not served at {base}; served: {', '.join(served)}")
    body = {"model": chosen, "messages": [{"role": "user", "content": SMOKE_PROMPT}], "temperature": 0, "max_tokens": 32}
    started = time.monotonic()
    with httpx.Client(timeout=timeout) as client:
        data = _json(_request(client, "POST", f"{base}/v1/chat/completions", json=body), "/v1/chat/completions")
    seconds = time.monotonic() - started
    choices = data.get("choices") or []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    reply = (message or {}).get("content") or ""
    if not reply.strip():
        raise EndpointError("E_EMPTY_REPLY", f"{chosen} at {base} answered an empty reply: {str(data)[:BODY_EXCERPT]}")
    usage = data.get("usage") or {}
    return SmokeResult(url=base, model=chosen, served=served, reply=reply.strip(), seconds=round(seconds, 3),
                       completion_tokens=usage.get("completion_tokens"))
