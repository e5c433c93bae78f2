"""An OpenAI-compatible server's base URL, as `bench`, `smoke`, the quality commands and an
external recipe give it.

The one place ``/v1`` is stripped and request paths are joined: users paste either form, and every
request path is built here from the base (:func:`v1_url`, or :func:`server_url` for the paths an
engine serves beside ``/v1``, such as ``/health``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from rigbook.errors import InputError

#: The path that lists the served models; ``up`` waits for it, the way a client would use the server.
MODELS_PATH = "/v1/models"

_REMEDY = "Give the server's base URL, e.g. http://127.0.0.1:8000 (with or without /v1)."


def base_url(url: str) -> str:
    """``http(s)://host[:port][/prefix]`` without a trailing slash or ``/v1``."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed IPv6 bracket
        parts = None
    if parts is None:
        raise InputError("E_INPUT", f"{url!r} is not a valid URL", _REMEDY)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("E_INPUT", f"{url!r} is not an http(s) URL", _REMEDY)
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise InputError(
            "E_INPUT", f"{url!r} has an invalid port", "Write the port as a number, e.g. :8000."
        ) from None
    path = parts.path.rstrip("/").removesuffix("/v1")
    return f"{parts.scheme}://{parts.netloc}{path}"


def v1_url(url: str, path: str) -> str:
    """The URL of ``/v1/<path>`` on the server at ``url`` (a base URL, with or without ``/v1``)."""
    return f"{base_url(url)}/v1/{path.lstrip('/')}"


def server_url(url: str, path: str) -> str:
    """The URL of ``path`` (e.g. ``/health``, or :data:`MODELS_PATH`) on the server at ``url``."""
    return f"{base_url(url)}/{path.lstrip('/')}"


def models_url(url: str) -> str:
    """The model list URL of the server at ``url``."""
    return server_url(url, MODELS_PATH)


def chat_url(url: str) -> str:
    """The chat completions URL of the server at ``url``."""
    return v1_url(url, "chat/completions")
