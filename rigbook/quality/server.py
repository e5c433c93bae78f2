"""What a quality run asks a server besides chat: who it is, its context length, token counts.

Engines differ here, so each question tries the forms the engines answer and says which one
answered: vLLM states ``max_model_len`` in ``/v1/models`` and counts tokens at ``/tokenize``;
llama.cpp's own server has ``/props`` and ``/tokenize``; llama-cpp-python counts at
``/extras/tokenize/count``.
"""

from __future__ import annotations

import asyncio

import httpx
from pydantic import BaseModel

from rigbook.openai.models import discover, pick_model
from rigbook.openai.urls import models_url, server_url


class Served(BaseModel):
    """The endpoint's identity as a result records it."""

    url: str
    model: str
    engine: str | None = None
    engine_version: str | None = None


async def identify(url: str, model: str | None) -> Served:
    """The served model (the first listed unless one is named) and the engine's name and version."""
    info = await asyncio.to_thread(discover, url)
    return Served(
        url=url,
        model=pick_model(url, info.models, model),
        engine=info.engine,
        engine_version=info.engine_version,
    )


async def _json(client: httpx.AsyncClient, method: str, url: str, **kw) -> dict | None:
    """The JSON object a request answers with, or None when the server does not offer it."""
    try:
        resp = await client.request(method, url, timeout=kw.pop("timeout", 30.0), **kw)
        body = resp.json() if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) else None


async def served_context(client: httpx.AsyncClient, url: str, model: str) -> tuple[int, str] | None:
    """(context length, where it was read) from the server itself, or None."""
    models = await _json(client, "GET", models_url(url))
    for entry in (models or {}).get("data") or []:
        if (
            isinstance(entry, dict)
            and entry.get("id") == model
            and isinstance(entry.get("max_model_len"), int)
        ):
            return entry["max_model_len"], "/v1/models max_model_len"
    props = await _json(client, "GET", server_url(url, "/props"))
    n_ctx = ((props or {}).get("default_generation_settings") or {}).get("n_ctx")
    if isinstance(n_ctx, int):
        return n_ctx, "/props n_ctx"
    return None


class TokenCounter:
    """Counts a text's tokens with the server's own tokenizer, where the server offers one."""

    def __init__(self, client: httpx.AsyncClient, url: str, model: str):
        self.client, self.url, self.model = client, url, model
        self.method: str | None = None

    async def _try(self, method: str, text: str) -> int | None:
        if method == "/tokenize":  # vLLM answers count; llama.cpp's server takes content
            body = await _json(
                self.client,
                "POST",
                server_url(self.url, method),
                timeout=600.0,
                json={
                    "model": self.model,
                    "prompt": text,
                    "content": text,
                    "add_special_tokens": False,
                },
            )
            if body is None:
                return None
            if isinstance(body.get("count"), int):
                return body["count"]
            tokens = body.get("tokens")
            return len(tokens) if isinstance(tokens, list) else None
        body = await _json(
            self.client,
            "POST",
            server_url(self.url, method),
            timeout=600.0,
            json={"model": self.model, "input": text},
        )
        count = (body or {}).get("count")
        return count if isinstance(count, int) else None

    async def count(self, text: str) -> int | None:
        """Tokens in ``text`` (no chat template, no special tokens), or None without a tokenizer."""
        if self.method == "":  # asked before: this server counts no tokens
            return None
        methods = [self.method] if self.method else ["/tokenize", "/extras/tokenize/count"]
        for method in methods:
            found = await self._try(method, text)
            if found is not None:
                self.method = method
                return found
        self.method = self.method or ""
        return None
