"""The hub application: ``create_app(db_url)`` migrates the database, loads the catalog and serves."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send

from rigbook import __version__
from rigbook.errors import RigbookError
from rigbook.hub import pages, reproduction_api
from rigbook.hub.answers import AnswerLayer, AnswerStore
from rigbook.hub.api import HTTP_REMEDY, ApiError, router
from rigbook.hub.boards import RankedBoards
from rigbook.hub.db import make_engine, session_factory
from rigbook.hub.freshness import DEFAULT_INTERVAL_S, VersionGate
from rigbook.hub.http import HeadAsGet, SecurityHeaders, allowed_methods
from rigbook.hub.limits import DEFAULT_MAX_BODY, DEFAULT_MAX_DEPTH, BodyLimit, validation_code
from rigbook.hub.migrate import upgrade
from rigbook.hub.prepared import PreparedReader, prepare_stale, watch
from rigbook.hub.rates import Limits
from rigbook.hub.repository import load_catalog

STATUS_OF_CODE = {
    "E_RECIPE_NOT_FOUND": 404,
    "E_AUTH": 401,
    "E_RATE_LIMIT": 429,
    "E_TOO_LARGE": 413,
    "E_DB": 503,
    "E_RESULT_REPLAYED": 409,
}


def _field_lines(exc: RequestValidationError) -> list[str]:
    """``path: problem; got value`` per error, the path without FastAPI's ``body`` prefix."""
    lines = []
    for err in exc.errors():
        if (
            err.get("type") == "json_invalid"
        ):  # FastAPI's own words are "0: JSON decode error; got {}"
            lines.append(
                f"(body): not valid JSON ({(err.get('ctx') or {}).get('error', 'decode error')}); "
                "send the recipe or result as a JSON object with Content-Type: application/json"
            )
            continue
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] == "body":
            loc = loc[1:]
        got = repr(err.get("input"))
        lines.append(
            f"{'.'.join(loc) or '(body)'}: {err.get('msg')}; got {got[:77] + '...' if len(got) > 80 else got}"
        )
    return lines


class HubApplication(FastAPI):
    """The hub's FastAPI application behind its answer layer (:mod:`rigbook.hub.answers`), which sees
    a request before any of the framework's middleware does."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.state.answer_layer(scope, receive, send)


def create_app(
    db_url: str | None = None,
    *,
    load_builtin: bool = True,
    migrate: bool = True,
    max_body: int = DEFAULT_MAX_BODY,
    max_depth: int = DEFAULT_MAX_DEPTH,
    limits: Limits | None = None,
    fresh_within_s: float = DEFAULT_INTERVAL_S,
) -> FastAPI:
    """The hub on ``db_url`` (default: SQLite under RIGBOOK_HOME), migrated and with the built-in catalog loaded
    (``migrate=False`` skips both: the workers of `hub serve --workers N` leave them to the parent).
    Reads answer from this worker's memory and see another worker's write within ``fresh_within_s``
    (:mod:`rigbook.hub.freshness`)."""
    engine = make_engine(db_url)
    sessions = session_factory(engine)
    watch(sessions)
    if migrate:
        upgrade(engine)
        if load_builtin:
            load_catalog(sessions)
        prepare_stale(sessions)

    app = HubApplication(
        title="rigbook hub",
        version=__version__,
        description="Serving recipes for LLMs on your own GPUs, with claimed and measured numbers.",
    )
    app.state.engine = engine
    app.state.sessions = sessions
    app.state.limits = limits or Limits()
    app.state.version = VersionGate(sessions, fresh_within_s)
    app.state.boards = RankedBoards(sessions)
    app.state.prepared = PreparedReader(engine)
    app.state.answers = AnswerStore()

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RigbookError)
    async def _rigbook_error(_request: Request, exc: RigbookError) -> JSONResponse:
        return ApiError(
            STATUS_OF_CODE.get(exc.code, 422),
            exc.code,
            exc.message,
            details=exc.details,
            remedy=exc.remedy,
        ).response()

    @app.exception_handler(SQLAlchemyError)
    async def _db_error(_request: Request, exc: SQLAlchemyError) -> JSONResponse:
        # Busy past the timeout, or the server gone: the request may succeed when retried.
        first = str(getattr(exc, "orig", None) or exc).splitlines()[0][:300]
        return ApiError(
            503,
            "E_DB",
            f"the database did not answer in time or failed: {type(exc).__name__}: {first}",
            headers={"Retry-After": "1"},
            remedy="Retry after the Retry-After seconds; if it persists, the hub's operator "
            "should check its database.",
        ).response()

    @app.exception_handler(Exception)
    async def _internal(_request: Request, exc: Exception) -> JSONResponse:
        return ApiError(500, "E_INTERNAL", f"the hub failed: {type(exc).__name__}").response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        lines = _field_lines(exc)
        code = validation_code(request.method, request.url.path)
        not_json = any(err.get("type") == "json_invalid" for err in exc.errors())
        message = (
            "the request body is not valid JSON"
            if not_json
            else f"{len(lines)} problem(s) in the request"
        )
        return ApiError(
            422, code, message, details=lines, remedy=HTTP_REMEDY if code == "E_INPUT" else None
        ).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404 and not request.url.path.startswith("/api/"):
            return pages.not_found(request)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            allowed = ", ".join(allowed_methods(request.app, request.scope))
            return ApiError(
                405,
                "E_METHOD",
                f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}",
                headers=headers | {"Allow": allowed},
            ).response()
        if exc.status_code == 404:
            return ApiError(
                404,
                "E_RECIPE_NOT_FOUND",
                f"nothing at {request.url.path} on this hub",
                remedy=HTTP_REMEDY,
            ).response()
        return ApiError(
            exc.status_code, "E_INPUT", str(exc.detail), headers=headers, remedy=HTTP_REMEDY
        ).response()

    app.include_router(router)
    app.include_router(reproduction_api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    app.add_middleware(BodyLimit, max_bytes=max_body, max_depth=max_depth)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SecurityHeaders)
    app.state.answer_layer = AnswerLayer(partial(FastAPI.__call__, app), app.state)
    return app
