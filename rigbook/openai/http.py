"""One request to an endpoint, its failures as coded errors (E_CONNECT, E_HTTP)."""

from __future__ import annotations

import ssl
from functools import cache
from typing import Any

import httpx

from rigbook.errors import EndpointError

BODY_EXCERPT = 300


@cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once: each client would otherwise load the CA bundle
    anew (a tenth of a second of CPU), and a bench or capacity run opens several per cell."""
    return httpx.create_ssl_context()


def request(client: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """Send one request; a refused or timed-out connection is E_CONNECT, an HTTP error E_HTTP."""
    try:
        response = client.request(method, url, **kwargs)
    except (httpx.ConnectError, httpx.TimeoutException) as exc:
        raise EndpointError("E_CONNECT", f"{method} {url}: {type(exc).__name__}: {exc}") from None
    except httpx.HTTPError as exc:
        raise EndpointError("E_CONNECT", f"{method} {url}: {exc}") from None
    if response.status_code >= 400:
        body = response.text[:BODY_EXCERPT].strip()
        raise EndpointError(
            "E_HTTP", f"{method} {url} answered HTTP {response.status_code}: {body}"
        )
    return response


def json_object(response: httpx.Response, what: str) -> dict[str, Any]:
    """The answer's JSON object; E_HTTP when it is not JSON or not an object."""
    try:
        data = response.json()
    except ValueError:
        raise EndpointError(
            "E_HTTP", f"{what} did not answer JSON: {response.text[:BODY_EXCERPT]!r}"
        ) from None
    if not isinstance(data, dict):
        raise EndpointError("E_HTTP", f"{what} answered {type(data).__name__}, not a JSON object")
    return data
