"""Discovery: the models an endpoint serves (``GET /v1/models``), the engine behind it, and which
model a run asks for."""

from __future__ import annotations

import httpx
from pydantic import BaseModel

from rigbook.errors import EndpointError
from rigbook.openai.http import json_object, request, tls_context
from rigbook.openai.urls import models_url, server_url

# owned_by values the engines put in /v1/models
_OWNERS = {
    "vllm": "vllm",
    "sglang": "sglang",
    "llamacpp": "llama.cpp",
    "llama.cpp": "llama.cpp",
    "tgi": "tgi",
}


class ServerInfo(BaseModel):
    """What the endpoint says about itself."""

    models: list[str]
    engine: str | None = None
    engine_version: str | None = None
    engine_known: bool = False


def _version(client: httpx.Client, url: str) -> str | None:
    """The engine version where the server answers ``/version`` (vLLM and SGLang do)."""
    try:
        answer = client.get(server_url(url, "/version"), timeout=3.0)
        data = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return str(version) if version is not None else None


def discover(url: str, *, timeout: float = 10.0) -> ServerInfo:
    """The served model ids, and the engine and its version as far as the server tells them."""
    endpoint = models_url(url)
    with httpx.Client(timeout=timeout, verify=tls_context()) as client:
        data = json_object(request(client, "GET", endpoint), endpoint).get("data") or []
        listed = [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
        owner = next((m.get("owned_by") for m in listed if m.get("owned_by")), None)
        version = _version(client, url)
    engine = _OWNERS.get(str(owner).lower(), owner) if owner else None
    return ServerInfo(
        models=[str(m["id"]) for m in listed if m.get("id")],
        engine=str(engine) if engine is not None else None,
        engine_version=version,
        engine_known=str(owner).lower() in _OWNERS,
    )


def pick_model(
    url: str, served: list[str], wanted: str | None, *, trust_empty: bool = False
) -> str:
    """The model a run asks for: ``wanted``, else the first listed. E_MODEL_ID when none is listed
    and none named, or the named one is not listed; ``trust_empty`` takes a server that lists
    none at its word for a named one (the bench measures servers whose list is empty)."""
    if wanted is None and not served:
        raise EndpointError(
            "E_MODEL_ID", f"{url} lists no models", "Check that the server is ready."
        )
    if wanted is None:
        return served[0]
    if wanted not in served and (served or not trust_empty):
        raise EndpointError(
            "E_MODEL_ID",
            f"{url} does not serve {wanted!r}; served: {', '.join(served) or 'none'}",
        )
    return wanted
