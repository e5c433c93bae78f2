"""API v1: recipes, revisions, results and the leaderboard, as JSON.

Errors have one shape: ``{"error": {"code", "message", "remedy", "details"}}``
with a code from :mod:`rigbook.codes`; validation errors list one field path
per line in ``details``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session, sessionmaker

from rigbook.bench.result import BenchResult
from rigbook.codes import CODES, Code, as_code
from rigbook.errors import ErrorBody, ErrorDocument
from rigbook.hub import repository as repo
from rigbook.hub.admission import recipe_problems
from rigbook.hub.auth import RateLimiter, token_name
from rigbook.hub.leaderboard import Leaderboard, build_leaderboard
from rigbook.hub.schemas import RecipePage, ResultAccepted, RevisionList
from rigbook.recipe.load import dump_recipe, parse_recipe
from rigbook.recipe.schema import Recipe

MAX_PAGE = 500
# E_INPUT's own remedy is about the CLI's --help; over HTTP, the schema says what is accepted.
HTTP_REMEDY = "See /openapi.json for the operations of this hub, their methods, parameters and bodies."


class ApiError(Exception):
    """An answer other than success, in the hub's error shape (:class:`ErrorDocument`)."""

    def __init__(self, status: int, code: Code | str, message: str, *, details: list[str] | None = None,
                 headers: dict[str, str] | None = None, remedy: str | None = None):
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(code=as_code(code), message=message, remedy=remedy or CODES[as_code(code)].remedy,
                              details=details or [])
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        document = ErrorDocument(error=self.body).model_dump(mode="json")
        return JSONResponse(document, status_code=self.status, headers=self.headers)


ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorDocument} for status in (401, 404, 413, 422, 429)}


def factory(request: Request) -> sessionmaker[Session]:
    return request.app.state.sessions


def writer(request: Request) -> str:
    """The name of the token that authorises this write; 401 without one, 429 past its rate limit."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "E_AUTH", "this write needs an API token: send `Authorization: Bearer TOKEN`")
    with request.app.state.sessions() as session:
        name = token_name(session, token.strip())
    if name is None:
        raise ApiError(401, "E_AUTH", "the API token is not known to this hub")
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.hit(name)
    if wait is not None:
        raise ApiError(429, "E_RATE_LIMIT", f"token {name!r} made more than {limiter.limit} writes in "
                       f"{limiter.window_s:g} s; retry in {wait:.0f} s", headers={"Retry-After": str(max(1, round(wait + 0.5)))})
    return name


async def given_json(request: Request) -> Any:
    """The request body's JSON value as sent (``207`` stays an int), so a record is stored as given; None when the
    body is not JSON (the body parameter's validation reports that)."""
    try:
        return json.loads(await request.body())
    except ValueError:
        return None


Sessions = Annotated[sessionmaker[Session], Depends(factory)]
Writer = Annotated[str, Depends(writer)]
GivenJson = Annotated[Any, Depends(given_json)]

router = APIRouter(prefix="/api/v1", tags=["v1"])


@router.get("/recipes", response_model=RecipePage, responses=ERRORS)
def list_recipes(
    request: Request,
    sessions: Sessions,
    q: Annotated[str | None, Query(max_length=500, description="Words that must all appear.")] = None,
    model: Annotated[str | None, Query(max_length=200, description="Model slug or name.")] = None,
    card_family: Annotated[str | None, Query(max_length=200, description="Card family or card name.")] = None,
    device_count: Annotated[int | None, Query(ge=0, le=repo.MAX_DEVICE_COUNT)] = None,
    engine: Annotated[str | None, Query(max_length=200)] = None,
    tag: Annotated[str | None, Query(max_length=200)] = None,
    tier: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> JSONResponse:
    """Recipes matching every filter given, ordered by slug; ``next`` is the URL of the next page."""
    filters = repo.RecipeFilters(q=q, model=model, card_family=card_family, device_count=device_count,
                                 engine=engine, tag=tag, tier=tier)
    with sessions() as session:
        total, items = repo.list_records(session, filters, limit=limit, offset=offset)
    following = None
    if offset + len(items) < total:
        following = str(request.url.include_query_params(offset=offset + len(items), limit=limit))
    return JSONResponse({"items": items, "total": total, "limit": limit, "offset": offset, "next": following})


@router.get("/recipes/{slug}.json", response_model=Recipe, responses=ERRORS)
def get_recipe(slug: str, sessions: Sessions) -> JSONResponse:
    """The latest revision of one recipe, in the public record's shape."""
    with sessions() as session:
        record = repo.get_record(session, slug)
    if record is None:
        raise ApiError(404, "E_RECIPE_NOT_FOUND", f"no recipe {slug!r} on this hub")
    return JSONResponse(record)


@router.get("/recipes/{slug}/revisions", response_model=RevisionList, responses=ERRORS)
def list_revisions(slug: str, sessions: Sessions) -> RevisionList:
    """Every revision of one recipe, oldest first."""
    with sessions() as session:
        found = repo.revisions(session, slug)
    if found is None:
        raise ApiError(404, "E_RECIPE_NOT_FOUND", f"no recipe {slug!r} on this hub")
    return RevisionList(slug=slug, revisions=found)


@router.post("/recipes", response_model=Recipe, status_code=201, responses=ERRORS)
def post_recipe(recipe: Recipe, given: GivenJson, sessions: Sessions, _writer: Writer) -> JSONResponse:
    """Add a recipe, or the next revision of one (keeping the measured points results added): the hub sets
    revision, created_at, updated_at, links and speeds. Measured points are refused: only results add them."""
    # The body validated as a Recipe, so it is a JSON object; the fallback only keeps the types honest.
    record = given if isinstance(given, dict) else dump_recipe(recipe)
    problems = recipe_problems(recipe) + repo.storage_problems(recipe, record)
    if problems:
        raise ApiError(422, "E_RECIPE_INVALID", f"{len(problems)} problem(s) in the recipe", details=problems)
    return JSONResponse(repo.put_recipe(sessions, record), status_code=201)


@router.post("/recipes/{slug}/results", response_model=ResultAccepted, status_code=201, responses=ERRORS)
def post_result(slug: str, result: BenchResult, sessions: Sessions, writer_name: Writer) -> JSONResponse:
    """Add a bench result's perf points to the recipe as ``measured`` (a new revision), or refuse it with every
    reason: a bad hash, missing conditions, or another GPU count, card family or model than the recipe's."""
    accepted = repo.add_result(sessions, slug, result, writer_name)
    return JSONResponse(accepted.model_dump(mode="json"), status_code=200 if accepted.duplicate else 201)


@router.get("/leaderboard.json", response_model=Leaderboard)
def leaderboard(sessions: Sessions) -> Leaderboard:
    """Per model and hardware, decode tok/s at each concurrency; measured and claimed kept apart, with conditions."""
    with sessions() as session:
        return build_leaderboard(stored_recipes(session))


def stored_recipes(session: Session) -> list[Recipe]:
    """The latest revision of every recipe, parsed."""
    return [parse_recipe(r, r.get("slug", "record")) for r in repo.all_records(session)]

