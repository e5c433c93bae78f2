"""HTTP details every answer shares: security headers, HEAD on every GET route, the methods a path allows.

The pages need no script and no inline style: the chart is inline SVG whose
colours are presentation attributes, and the one stylesheet is
``/static/hub.css``. So the Content-Security-Policy allows only the hub's own
stylesheets, scripts and images, no framing, and no form target but the hub.
The interactive API docs (``/docs``, ``/redoc``) load their viewer from a CDN
and get a policy that allows it.
"""

from __future__ import annotations

from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DOCS_CSP = (
    "default-src 'none'; script-src https://cdn.jsdelivr.net 'unsafe-inline'; "
    "style-src https://cdn.jsdelivr.net 'unsafe-inline'; img-src 'self' data: https://fastapi.tiangolo.com "
    "https://cdn.redoc.ly; font-src https://fonts.gstatic.com; connect-src 'self'; worker-src blob:; "
    "frame-ancestors 'none'"
)
DOCS_PATHS = ("/docs", "/redoc")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


class SecurityHeaders:
    """ASGI middleware: the security headers on every answer, errors included."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = (DOCS_CSP if scope["path"] in DOCS_PATHS else PAGE_CSP).encode()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    h
                    for h in message.get("headers", [])
                    if h[0].lower() != b"content-security-policy"
                ]
                message["headers"] = [
                    *headers,
                    (b"content-security-policy", csp),
                    *SECURITY_HEADERS,
                ]
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGet:
    """ASGI middleware: a HEAD is answered as its GET would be, headers only (RFC 9110 9.3.2)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {
                    "type": "http.response.body",
                    "body": b"",
                    "more_body": message.get("more_body", False),
                }
            await send(message)

        await self.app(dict(scope, method="GET"), receive, headers_only)


def allowed_methods(app: ASGIApp, scope: Scope) -> list[str]:
    """Every method some route takes at this path (HEAD wherever GET is), sorted.

    Each method is tried against every route, so two routes on one path (GET and POST of
    ``/api/v1/recipes``) both count; a mounted static folder takes GET.
    """
    methods: set[str] = set()
    for route in getattr(app, "routes", []):
        if isinstance(route, Mount):
            if route.matches(scope)[0] != Match.NONE:
                methods.add("GET")
            continue
        methods |= {m for m in METHODS if route.matches(dict(scope, method=m))[0] == Match.FULL}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)
