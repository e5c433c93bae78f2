"""A request body size limit that counts the bytes as they stream in.

Content-Length is checked first, but a chunked body (or one that lies about
its length) is counted too: the body is read up to the limit before the app
sees it, and a body past the limit is answered 413 without reaching the app.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rigbook.errors import ErrorDocument, RigbookError

DEFAULT_MAX_BODY = 1024 * 1024


def too_large_body(limit: int) -> bytes:
    """The 413 answer, in the hub's error shape."""
    error = RigbookError("E_TOO_LARGE", f"the request body is larger than {limit} bytes")
    return ErrorDocument(error=error.body()).model_dump_json().encode()


class BodyLimit:
    """ASGI middleware: answer 413 E_TOO_LARGE to any request whose body passes ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY):
        self.app = app
        self.max_bytes = max_bytes

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
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = too_large_body(self.max_bytes)
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
