"""The hub application: ``create_app(db_url)`` migrates the database, loads the catalog and serves."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from rigbook import __version__
from rigbook.errors import RigbookError
from rigbook.hub import pages
from rigbook.hub.api import HTTP_REMEDY, ApiError, router
from rigbook.hub.auth import RateLimiter
from rigbook.hub.db import make_engine, session_factory
from rigbook.hub.limits import DEFAULT_MAX_BODY, BodyLimit
from rigbook.hub.migrate import upgrade
from rigbook.hub.repository import load_catalog

DEFAULT_RATE = (60, 60.0)
STATUS_OF_CODE = {"E_RECIPE_NOT_FOUND": 404, "E_AUTH": 401, "E_RATE_LIMIT": 429, "E_TOO_LARGE": 413, "E_DB": 503}


def _field_lines(exc: RequestValidationError) -> list[str]:
    """``path: problem; got value`` per error, the path without FastAPI's ``body`` prefix."""
    lines = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":  # FastAPI's own words are "0: JSON decode error; got {}"
            lines.append(f"(body): not valid JSON ({(err.get('ctx') or {}).get('error', 'decode error')}); "
                         "send the recipe or result as a JSON object with Content-Type: application/json")
            continue
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] == "body":
            loc = loc[1:]
        got = repr(err.get("input"))
        lines.append(f"{'.'.join(loc) or '(body)'}: {err.get('msg')}; got {got[:77] + '...' if len(got) > 80 else got}")
    return lines


def _validation_code(request: Request) -> str:
    if request.method == "POST" and request.url.path.endswith("/results"):
        return "E_RESULT_REFUSED"
    if request.method == "POST":
        return "E_RECIPE_INVALID"
    return "E_INPUT"


def create_app(db_url: str | None = None, *, load_builtin: bool = True, max_body: int = DEFAULT_MAX_BODY,
               rate: tuple[int, float] = DEFAULT_RATE) -> FastAPI:
    """The hub on ``db_url`` (default: SQLite under RIGBOOK_HOME), migrated and with the built-in catalog loaded."""
    engine = make_engine(db_url)
    upgrade(engine)
    sessions = session_factory(engine)
    if load_builtin:
        load_catalog(sessions)

    app = FastAPI(title="rigbook hub", version=__version__,
                  description="Serving recipes for LLMs on your own GPUs, with claimed and measured numbers.")
    app.state.engine = engine
    app.state.sessions = sessions
    app.state.rate_limiter = RateLimiter(*rate)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RigbookError)
    async def _rigbook_error(_request: Request, exc: RigbookError) -> JSONResponse:
        return ApiError(STATUS_OF_CODE.get(exc.code, 422), exc.code, exc.message, details=exc.details,
                        remedy=exc.remedy).response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        lines = _field_lines(exc)
        code = _validation_code(request)
        not_json = any(err.get("type") == "json_invalid" for err in exc.errors())
        message = "the request body is not valid JSON" if not_json else f"{len(lines)} problem(s) in the request"
        return ApiError(422, code, message, details=lines, remedy=HTTP_REMEDY if code == "E_INPUT" else None).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404 and not request.url.path.startswith("/api/"):
            return pages.not_found(request)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            allowed = headers.get("allow") or headers.get("Allow") or "see /openapi.json"
            return ApiError(405, "E_METHOD", f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}",
                            headers=headers).response()
        if exc.status_code == 404:
            return ApiError(404, "E_RECIPE_NOT_FOUND", f"nothing at {request.url.path} on this hub",
                            remedy=HTTP_REMEDY).response()
        return ApiError(exc.status_code, "E_INPUT", str(exc.detail), headers=headers, remedy=HTTP_REMEDY).response()

    app.include_router(router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    app.add_middleware(BodyLimit, max_bytes=max_body)
    return app
