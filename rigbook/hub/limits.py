"""Limits on request bodies: their size, counted as the bytes stream in, and how deep their JSON nests.

Content-Length is checked first, but a chunked body (or one that lies about
its length) is counted too: the body is read up to the limit before the app
sees it, and a body past the limit is answered 413 without reaching the app.
A JSON body nested deeper than ``max_depth`` is answered 422 before any
parser recurses into it.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rigbook.errors import ErrorDocument, RigbookError

DEFAULT_MAX_BODY = 1024 * 1024
# A bench result nests about 6 deep; a recipe about 5.
DEFAULT_MAX_DEPTH = 32
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def validation_code(method: str, path: str) -> str:
    """The code of a refused request: E_RESULT_REFUSED for a result, E_RECIPE_INVALID for a recipe, else E_INPUT."""
    if method == "POST" and path.endswith("/results"):
        return "E_RESULT_REFUSED"
    if method == "POST":
        return "E_RECIPE_INVALID"
    return "E_INPUT"


def json_depth(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings do not count)."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub(b"", body)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


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
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_deep(self, scope: Scope, send: Send, depth: int) -> None:
        error = RigbookError(
            validation_code(scope["method"], scope["path"]),
            f"the JSON body nests {depth} levels deep; at most {self.max_depth} are accepted",
            "Send the recipe or result as rigbook writes it: no field nests that deep.",
        )
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
