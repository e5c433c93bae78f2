"""Limits on request bodies: their size, counted as the bytes stream in, and how deep their JSON nests.

Content-Length is checked first, but a chunked body (or one that lies about
its length) is counted too: the body is read up to the limit before the app
sees it, and a body past the limit is answered 413 without reaching the app.
A JSON body nested deeper than ``max_depth`` is answered 422 before any
parser recurses into it. A JSON body with ``NaN``, ``Infinity``, a number too
large for a float, or an object with one key twice is answered 422 too: Python's
parser would take the first three as non-finite floats and keep the last of
duplicate keys, so what a reader of the JSON sees could differ from what the hub
stores.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rigbook.errors import ErrorDocument, RigbookError

DEFAULT_MAX_BODY = 1024 * 1024
# A bench result nests about 6 deep; a recipe about 5.
DEFAULT_MAX_DEPTH = 32
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def validation_code(method: str, path: str) -> str:
    """The code of a refused request: E_RESULT_REFUSED for a result, E_REPRODUCTION_REFUSED for a
    reproduction, E_RECIPE_INVALID for a recipe, else E_INPUT (a key's registration)."""
    if method == "POST" and path.endswith("/results"):
        return "E_RESULT_REFUSED"
    if method == "POST" and path.endswith("/reproductions"):
        return "E_REPRODUCTION_REFUSED"
    if method == "POST" and path.startswith("/api/v1/recipes"):
        return "E_RECIPE_INVALID"
    return "E_INPUT"


def json_depth(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings do not count)."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub(b"", body)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


class _Unfaithful(ValueError):
    """A JSON text that parses, but not to what its text says."""


def _no_constant(name: str) -> Any:
    raise _Unfaithful(f"{name} is not a JSON number; send a finite number or null")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Unfaithful(f"{text} is beyond a double's range; send a finite number or null")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _Unfaithful(f"the key {key!r} appears twice in one object")
        seen.add(key)
    return dict(pairs)


def json_problem(body: bytes) -> str | None:
    """Why ``body`` is JSON the hub refuses (a non-finite number, a duplicate key); None when it is
    faithful JSON or not JSON at all (the route's own validation says so then)."""
    try:
        json.loads(
            body,
            parse_constant=_no_constant,
            parse_float=_finite,
            object_pairs_hook=_unique_keys,
        )
    except _Unfaithful as exc:
        return str(exc)
    except ValueError:
        return None
    return None


def too_large_body(limit: int) -> bytes:
    """The 413 answer, in the hub's error shape."""
    error = RigbookError("E_TOO_LARGE", f"the request body is larger than {limit} bytes")
    return ErrorDocument(error=error.body()).model_dump_json().encode()


class BodyLimit:
    """ASGI middleware: answer 413 E_TOO_LARGE to any request whose body passes ``max_bytes``."""

    def __init__(
        self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY, max_depth: int = DEFAULT_MAX_DEPTH
    ):
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        depth = json_depth(body) if body else 0
        if depth > self.max_depth:
            await self._too_deep(scope, send, depth)
            return
        problem = json_problem(body) if body else None
        if problem is not None:
            await self._unfaithful(scope, send, problem)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_deep(self, scope: Scope, send: Send, depth: int) -> None:
        await self._invalid(
            scope,
            send,
            f"the JSON body nests {depth} levels deep; at most {self.max_depth} are accepted",
            "Send the recipe or result as rigbook writes it: no field nests that deep.",
        )

    async def _unfaithful(self, scope: Scope, send: Send, problem: str) -> None:
        await self._invalid(
            scope,
            send,
            f"the JSON body is not accepted: {problem}",
            "Send the recipe or result as rigbook writes it: finite numbers, each key once.",
        )

    async def _invalid(self, scope: Scope, send: Send, message: str, remedy: str) -> None:
        error = RigbookError(validation_code(scope["method"], scope["path"]), message, remedy)
        body = ErrorDocument(error=error.body()).model_dump_json().encode()
        await send(
            {
                "type": "http.response.start",
                "status": 422,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _refuse(self, send: Send) -> None:
        body = too_large_body(self.max_bytes)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
