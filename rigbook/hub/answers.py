"""Answers served before the web framework: a read the hub has answered since its last write is sent
again as the bytes it was, with no routing, validation or database round trip.

This layer keeps the whole answer (status 200, its headers, its body) to the hub's versioned reads
(recipe JSON, recipe pages, the leaderboard's JSON and pages) keyed by the request (path, query,
host, scheme) and the write version it was made under (:mod:`rigbook.hub.freshness`), and answers
from it while this worker's version is fresh. When the version is due to be read again, this layer
reads it (one read off the event loop, which every request that finds it due waits for). When the
answer is not held: a recipe's JSON or page, and the board's default pages (no query string), are
the bytes the last write prepared, one indexed read (:mod:`rigbook.hub.prepared`), kept here;
anything else (a board with a query string: a filter, another page or offset) goes on to the
application, which answers and leaves its answer here. So a read sees a write within the
version's interval, and a worker that wrote sees its write at once (:meth:`VersionGate.expire`).

Not served here: any method but GET, a request with a body, and every read while a per-address
read limit is on (each read must be counted).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import OrderedDict

from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import State
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rigbook.hub.api import CACHE_CONTROL
from rigbook.hub.freshness import VersionGate
from rigbook.hub.http import PAGE_CSP, SECURITY_HEADERS
from rigbook.hub.prepared import BOARD_PATHS, Prepared, PreparedReader, finish_board
from rigbook.hub.rates import Limits
from rigbook.hub.repository import SLUG_RE

DEFAULT_ENTRIES = 8192
# Only reads whose bytes do not depend on who asks and change only with the write version: a
# recipe's JSON and page, the board (JSON and page). Any other path goes to the application.
CACHED_PATHS = re.compile(
    r"/api/v1/recipes/[^/]+\.json|/r/[^/]+|/api/v1/leaderboard\.json|/leaderboard"
)
# Reads a write prepared (rigbook.hub.prepared): a miss is one indexed read of their bytes.
# Only a slug the hub could hold is looked up (PostgreSQL refuses a NUL in a parameter, for one).
PREPARED_PATHS = re.compile(rf"/api/v1/recipes/{SLUG_RE.pattern}\.json|/r/{SLUG_RE.pattern}")
Key = tuple[str, bytes, bytes, str]


class Answer:
    """One answer as sent: its headers and body, and its ETag (None when it has none)."""

    __slots__ = ("body", "etag", "headers", "not_modified_headers")

    def __init__(self, headers: list[tuple[bytes, bytes]], body: bytes):
        self.headers, self.body = headers, body
        self.etag = next((v for k, v in headers if k == b"etag"), None)
        # A 304 carries the answer's headers but no body, so neither its length nor its type.
        self.not_modified_headers = [
            (k, v) for k, v in headers if k not in (b"content-length", b"content-type")
        ]


class AnswerStore:
    """Answers by request, for one write version at a time; least recently used dropped past ``entries``."""

    def __init__(self, entries: int = DEFAULT_ENTRIES):
        self.entries = entries
        self.version: int | None = None
        self._answers: OrderedDict[Key, Answer] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, version: int, key: Key) -> Answer | None:
        with self._lock:
            if version != self.version:
                return None
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def put(self, version: int, key: Key, answer: Answer) -> None:
        with self._lock:
            if version != self.version:  # a new version: every answer held is of an older state
                if self.version is not None and version < self.version:
                    return
                self._answers.clear()
                self.version = version
            self._answers[key] = answer
            while len(self._answers) > self.entries:
                self._answers.popitem(last=False)


def prepared_headers(found: Prepared) -> list[tuple[bytes, bytes]]:
    """The headers the application sends with a prepared answer (its security headers included)."""
    return [
        (b"content-length", str(len(found.body)).encode()),
        (b"content-type", found.content_type.encode()),
        (b"etag", found.etag.encode()),
        (b"cache-control", CACHE_CONTROL.encode()),
        (b"content-security-policy", PAGE_CSP.encode()),
        *SECURITY_HEADERS,
    ]


def _key(scope: Scope) -> Key | None:
    path: str = scope["path"]
    if not CACHED_PATHS.fullmatch(path):
        return None
    host = next((v for k, v in scope["headers"] if k == b"host"), b"")
    return (path, scope.get("query_string", b""), host, scope.get("scheme", "http"))


def _is_prepared(key: Key) -> bool:
    # The board's paths only with no query string: any other board read is a worker's slice.
    path, query = key[0], key[1]
    return PREPARED_PATHS.fullmatch(path) is not None or (path in BOARD_PATHS and query == b"")


def _matches(if_none_match: bytes, etag: bytes) -> bool:
    return any(t.strip() == etag for t in if_none_match.split(b","))


class AnswerLayer:
    """ASGI middleware, outermost: answers a GET from the store when this worker's write version is
    fresh, else passes it on and keeps a 200 answer for the version it was made under."""

    def __init__(self, app: ASGIApp, state: State):
        self.app = app
        self.state = state  # the application's: its version gate may be replaced (tests do)
        self._pending: tuple[VersionGate, asyncio.Future[int]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limits: Limits = self.state.limits
        key = (
            _key(scope)
            if scope["type"] == "http"
            and scope["method"] == "GET"
            and not limits.reads_per_address.on
            else None
        )
        if key is None:
            await self.app(scope, receive, send)
            return
        gate: VersionGate = self.state.version
        store: AnswerStore = self.state.answers
        version = gate.fresh()
        if version is None:
            try:
                version = await self._read_version(gate)
            except SQLAlchemyError:  # the database failed: the application answers (503, E_DB)
                await self.app(scope, receive, send)
                return
        answer = store.get(version, key)
        if answer is None and _is_prepared(key):
            answer = await self._prepared(scope, key, version)
        if answer is not None:
            await self._send(scope, answer, send)
            return
        await self._pass_on(scope, receive, send, key, version)

    async def _prepared(self, scope: Scope, key: Key, before: int) -> Answer | None:
        """The prepared answer to ``key``'s path, kept under ``before`` as :meth:`_pass_on` keeps
        one; None when there is none (the application answers: a 404, or a page it renders)."""
        reader: PreparedReader = self.state.prepared
        try:
            found = await run_in_threadpool(reader.read, key[0])
        except SQLAlchemyError:
            return None
        if found is None:
            return None
        if key[0] in BOARD_PATHS:
            # Every write renders the board again: a row older than the version read is one a
            # write left behind (a hub of older code on this database); the application answers.
            if found.version < before:
                return None
            found = finish_board(found, Request(scope))
        answer = Answer(prepared_headers(found), found.body)
        if self.state.version.last_read() == before:
            self.state.answers.put(before, key, answer)
        return answer

    async def _read_version(self, gate: VersionGate) -> int:
        """The version read from the database off the event loop, once for all the requests that
        find it due at the same time (the first reads, the others wait for that read)."""
        pending = self._pending
        if pending is None or pending[0] is not gate:
            future = asyncio.ensure_future(run_in_threadpool(gate.version))
            self._pending = pending = (gate, future)
            future.add_done_callback(lambda _: setattr(self, "_pending", None))
        return await asyncio.shield(pending[1])

    @staticmethod
    async def _send(scope: Scope, answer: Answer, send: Send) -> None:
        if answer.etag is not None:
            asked = next((v for k, v in scope["headers"] if k == b"if-none-match"), None)
            if asked is not None and _matches(asked, answer.etag):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 304,
                        "headers": answer.not_modified_headers,
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await send({"type": "http.response.start", "status": 200, "headers": answer.headers})
        await send({"type": "http.response.body", "body": answer.body})

    async def _pass_on(
        self, scope: Scope, receive: Receive, send: Send, key: Key, before: int
    ) -> None:
        started: list[Message] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(message)
            elif (
                message["type"] == "http.response.body"
                and not message.get("more_body", False)
                and len(started) == 1
                and started[0]["status"] == 200
                # No newer version seen since the route began: it answered from a state no older
                # than ``before`` (a newer one is never stale), so the answer is kept under it.
                and self.state.version.last_read() == before
            ):
                headers = [(bytes(k).lower(), bytes(v)) for k, v in started[0]["headers"]]
                self.state.answers.put(before, key, Answer(headers, message["body"]))
            await send(message)

        await self.app(scope, receive, keep)
