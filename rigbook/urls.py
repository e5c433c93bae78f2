"""An OpenAI-compatible server's base URL, as `bench` and `smoke` take it."""

from __future__ import annotations

from urllib.parse import urlsplit

from rigbook.errors import InputError


def base_url(url: str) -> str:
    """``http(s)://host[:port][/prefix]`` without a trailing slash or ``/v1`` (the bench adds ``/v1/...``)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed IPv6 bracket
        parts = None
    if parts is None:
        raise InputError("E_INPUT", f"{url!r} is not a valid URL",
                         "Give the server's base URL, e.g. http://127.0.0.1:8000 (with or without /v1).")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("E_INPUT", f"{url!r} is not an http(s) URL",
                         "Give the server's base URL, e.g. http://127.0.0.1:8000 (with or without /v1).")
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise InputError("E_INPUT", f"{url!r} has an invalid port", "Write the port as a number, e.g. :8000.") from None
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"
