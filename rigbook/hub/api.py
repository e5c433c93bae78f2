"""API v1: recipes, revisions, results and the leaderboard, as JSON.

Errors have one shape: ``{"error": {"code", "message", "remedy", "details"}}``
with a code from :mod:`rigbook.codes`; validation errors list one field path
per line in ``details``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from rigbook.bench.result import BenchResult
from rigbook.capacity.result import CapacityResult
from rigbook.codes import CODES, Code, as_code
from rigbook.errors import ErrorBody, ErrorDocument
from rigbook.hub import repository as repo
from rigbook.hub.admission import recipe_problems
from rigbook.hub.auth import token_name
from rigbook.hub.boards import RankedBoards
from rigbook.hub.freshness import VersionGate
from rigbook.hub.keys import (
    KeyInfo,
    KeyRegistered,
    KeyRevoked,
    get_key,
    register_key,
    revoke_key,
    token_keys,
)
from rigbook.hub.leaderboard import (
    METRICS,
    BoardFilters,
    BoardItem,
    EvidenceFilter,
    board_etag,
    canonical_scope,
)
from rigbook.hub.paths import json_path, recipe_etag
from rigbook.hub.rates import Limits, blocked, hit
from rigbook.hub.reproductions import posted_problems
from rigbook.hub.schemas import RecipePage, ResultAccepted, RevisionList
from rigbook.hub.signing import KEY_HEADER, SIGNATURE_HEADER
from rigbook.recipe.load import dump_recipe
from rigbook.recipe.schema import Recipe

MAX_PAGE = 500
BOARD_LIMIT = 100  # the JSON board's default page size
# E_INPUT's own remedy is about the CLI's --help; over HTTP, the schema says what is accepted.
HTTP_REMEDY = (
    "See /openapi.json for the operations of this hub, their methods, parameters and bodies."
)


class ApiError(Exception):
    """An answer other than success, in the hub's error shape (:class:`ErrorDocument`)."""

    def __init__(
        self,
        status: int,
        code: Code | str,
        message: str,
        *,
        details: list[str] | None = None,
        headers: dict[str, str] | None = None,
        remedy: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(
            code=as_code(code),
            message=message,
            remedy=remedy or CODES[as_code(code)].remedy,
            details=details or [],
        )
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        document = ErrorDocument(error=self.body).model_dump(mode="json")
        return JSONResponse(document, status_code=self.status, headers=self.headers)


class BoardPage(BaseModel):
    """One page of the leaderboard, with the total that match the filters."""

    metric: str
    items: list[BoardItem]
    total: int
    limit: int
    offset: int
    next: str | None


STATUS_TEXT = {
    304: "Not modified: the client's copy (If-None-Match) is current.",
    400: "The request could not be read.",
    401: "No token, or one the hub does not know.",
    404: "No such recipe, key or path.",
    405: "The path does not take this method (see Allow).",
    409: "The hub already holds this run (E_RESULT_REPLAYED).",
    413: "The body is larger than the hub accepts.",
    422: "The request or its body is not valid.",
    429: "Too many requests: wait Retry-After seconds.",
    500: "A failure inside the hub.",
    503: "The database is busy or unreachable (E_DB): retry after Retry-After seconds.",
}
READ_STATUSES = (400, 404, 405, 422, 429, 500, 503)
WRITE_STATUSES = (400, 401, 404, 405, 413, 422, 429, 500, 503)
RESULT_STATUSES = (*WRITE_STATUSES, 409)
CACHE_CONTROL = "public, max-age=10"


def answers(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route: the error shape for each error status, nothing for a 304."""
    return {
        s: {"description": STATUS_TEXT[s]}
        if s == 304
        else {"model": ErrorDocument, "description": STATUS_TEXT[s]}
        for s in statuses
    }


def factory(request: Request) -> sessionmaker[Session]:
    return request.app.state.sessions


def written(request: Request) -> VersionGate:
    """The hub's write version as this worker knows it."""
    return request.app.state.version


def client_address(request: Request) -> str:
    """The client's address (the proxy's, unless uvicorn is told to trust its X-Forwarded-For)."""
    return request.client.host if request.client else "unknown"


def too_many(what: str, wait: float) -> ApiError:
    return ApiError(
        429,
        "E_RATE_LIMIT",
        f"{what}; retry in {max(1, round(wait + 0.5))} s",
        headers={"Retry-After": str(max(1, round(wait + 0.5)))},
    )


async def read_limit(request: Request) -> None:
    """Count a read against its address's limit when one is set (off by default: each count is a write)."""
    limits: Limits = request.app.state.limits
    if limits.reads_per_address.on:
        address = client_address(request)
        wait = await run_in_threadpool(
            hit, request.app.state.sessions, f"read:{address}", limits.reads_per_address
        )
        if wait is not None:
            raise too_many(
                f"more than {limits.reads_per_address.limit} reads from {address} in "
                f"{limits.reads_per_address.window_s} s",
                wait,
            )


def writer(request: Request) -> str:
    """The name of the token that authorises this write; 401 without a known one, 429 past a rate limit
    (the token's writes, or its address's failed attempts). The token is never repeated in an answer."""
    limits: Limits = request.app.state.limits
    sessions = request.app.state.sessions
    address = client_address(request)
    failures = f"auth:{address}"
    waiting = blocked(sessions, failures, limits.auth_failures_per_address)
    if waiting is not None:
        raise too_many(
            f"more than {limits.auth_failures_per_address.limit} failed authentications from "
            f"{address} in {limits.auth_failures_per_address.window_s} s",
            waiting,
        )
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    name = None
    if scheme.lower() == "bearer" and token.strip():
        with sessions() as session:
            name = token_name(session, token.strip())
    if name is None:
        hit(sessions, failures, limits.auth_failures_per_address)
        message = (
            "the API token is not known to this hub, or was revoked"
            if token.strip()
            else "this write needs an API token: send `Authorization: Bearer TOKEN`"
        )
        raise ApiError(401, "E_AUTH", message)
    wait = hit(sessions, f"token:{name}", limits.writes_per_token)
    if wait is not None:
        raise too_many(
            f"token {name!r} made more than {limits.writes_per_token.limit} writes in "
            f"{limits.writes_per_token.window_s} s",
            wait,
        )
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


def signature_headers(request: Request) -> tuple[str, str] | None:
    """``(key id, signature)`` from a signed result's two headers; None when unsigned."""
    kid, signature = request.headers.get(KEY_HEADER), request.headers.get(SIGNATURE_HEADER)
    if kid is None and signature is None:
        return None
    if not kid or not signature:
        raise ApiError(
            422,
            "E_SIGNATURE",
            f"a signed result carries both {KEY_HEADER} and {SIGNATURE_HEADER}; got one",
        )
    return kid.strip(), signature.strip()


Signed = Annotated[tuple[str, str] | None, Depends(signature_headers)]

router = APIRouter(prefix="/api/v1", tags=["v1"], dependencies=[Depends(read_limit)])


@router.get("/recipes", response_model=RecipePage, responses=answers(*READ_STATUSES))
def list_recipes(
    request: Request,
    sessions: Sessions,
    q: Annotated[
        str | None, Query(max_length=500, description="Words that must all appear.")
    ] = None,
    model: Annotated[str | None, Query(max_length=200, description="Model slug or name.")] = None,
    card_family: Annotated[
        str | None, Query(max_length=200, description="Card family or card name.")
    ] = None,
    device_count: Annotated[int | None, Query(ge=0, le=repo.MAX_DEVICE_COUNT)] = None,
    engine: Annotated[str | None, Query(max_length=200)] = None,
    tag: Annotated[str | None, Query(max_length=200)] = None,
    tier: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> JSONResponse:
    """Recipes matching every filter given, ordered by slug; ``next`` is the URL of the next page."""
    filters = repo.RecipeFilters(
        q=q,
        model=model,
        card_family=card_family,
        device_count=device_count,
        engine=engine,
        tag=tag,
        tier=tier,
    )
    with sessions() as session:
        total, items = repo.list_records(session, filters, limit=limit, offset=offset)
    return JSONResponse(
        {
            "items": items,
            "total": total,
            "limit": limit,
            "offset": offset,
            "next": next_url(request, offset, len(items), total, limit),
        }
    )


def next_url(request: Request, offset: int, count: int, total: int, limit: int) -> str | None:
    """The URL of the page after this one, None on the last."""
    if offset + count >= total:
        return None
    return str(request.url.include_query_params(offset=offset + count, limit=limit))


def cached_answer(
    request: Request, etag: str, body: bytes | str | None, media_type: str = "application/json"
) -> Response:
    """200 with ``body``, or 304 when the client already has ``etag``; both with the cache headers."""
    headers = {"ETag": etag, "Cache-Control": CACHE_CONTROL}
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


@router.get("/recipes/{slug}.json", response_model=Recipe, responses=answers(304, *READ_STATUSES))
def get_recipe(request: Request, slug: str, sessions: Sessions) -> Response:
    """The latest revision of one recipe, in the public record's shape, with an ETag of its revision:
    the bytes its last write prepared (docs/hub.md)."""
    found = (
        request.app.state.prepared.read(json_path(slug)) if repo.SLUG_RE.fullmatch(slug) else None
    )
    if found is not None:
        return cached_answer(request, found.etag, found.body)
    with sessions() as session:  # not prepared yet (a hub that has not started on this database)
        record = repo.get_record_text(session, slug)
    if record is None:
        raise ApiError(404, "E_RECIPE_NOT_FOUND", f"no recipe {slug!r} on this hub")
    no, digest, text = record
    return cached_answer(request, recipe_etag(no, digest), text)


@router.get(
    "/recipes/{slug}/revisions", response_model=RevisionList, responses=answers(*READ_STATUSES)
)
def list_revisions(slug: str, sessions: Sessions) -> RevisionList:
    """Every revision of one recipe, oldest first."""
    with sessions() as session:
        found = repo.revisions(session, slug)
    if found is None:
        raise ApiError(404, "E_RECIPE_NOT_FOUND", f"no recipe {slug!r} on this hub")
    return RevisionList(slug=slug, revisions=found)


@router.post(
    "/recipes",
    response_model=Recipe,
    status_code=201,
    responses={
        200: {"model": Recipe, "description": "Unchanged: the latest revision has this content."},
        **answers(*WRITE_STATUSES),
    },
)
def post_recipe(
    request: Request, recipe: Recipe, given: GivenJson, sessions: Sessions, _writer: Writer
) -> JSONResponse:
    """Add a recipe, or the next revision of one (keeping the measured points results added): the hub sets
    revision, created_at, updated_at, links and speeds. Measured points are refused: only results add them.
    A record whose content hash is the latest revision's adds nothing: that revision is returned (200)."""
    # The body validated as a Recipe, so it is a JSON object; the fallback only keeps the types honest.
    record = given if isinstance(given, dict) else dump_recipe(recipe)
    problems = (
        recipe_problems(recipe, record)
        + repo.storage_problems(recipe, record)
        + posted_problems(record)
    )
    if problems:
        raise ApiError(
            422, "E_RECIPE_INVALID", f"{len(problems)} problem(s) in the recipe", details=problems
        )
    stored = repo.put_recipe(sessions, record)
    written(request).expire()
    return JSONResponse(stored.record, status_code=200 if stored.unchanged else 201)


@router.post(
    "/recipes/{slug}/results",
    response_model=ResultAccepted,
    status_code=201,
    responses={
        200: {"model": ResultAccepted, "description": "Published before: nothing added."},
        **answers(*RESULT_STATUSES),
    },
)
def post_result(
    request: Request,
    slug: str,
    result: BenchResult,
    given: GivenJson,
    sessions: Sessions,
    writer_name: Writer,
    signed: Signed,
) -> JSONResponse:
    """Add a bench result's perf points to the recipe as ``measured`` (a new revision), or refuse it with every
    reason: a bad hash, missing conditions, another rig, GPU count, card, engine, quantisation or model than
    the recipe's, an impossible rate, or numbers its own requests do not give. Points whose requests the
    result carries are recomputed and marked ``consistent-with-journal``. The hash is checked on the JSON as
    sent (a result an older rigbook wrote keeps its hash)."""
    accepted = repo.add_result(sessions, slug, result, writer_name, given, signed)
    written(request).expire()
    return JSONResponse(
        accepted.model_dump(mode="json"), status_code=200 if accepted.duplicate else 201
    )


@router.post(
    "/recipes/{slug}/capacity",
    response_model=ResultAccepted,
    status_code=201,
    responses={
        200: {"model": ResultAccepted, "description": "Published before: nothing added."},
        **answers(*RESULT_STATUSES),
    },
)
def post_capacity(
    request: Request,
    slug: str,
    result: CapacityResult,
    given: GivenJson,
    sessions: Sessions,
    writer_name: Writer,
    signed: Signed,
) -> JSONResponse:
    """Add a `rigbook capacity` result's users_at_slo point to the recipe as ``measured`` (a new
    revision), or refuse it with every reason: the bench result's reasons for its probes and point,
    a bad capacity hash, a search stopped before it settled, or an answer its probes' requests do
    not give. When the probes carry their requests, the hub rebuilds each cell, reads each SLO term
    again and applies the search's rule: a point that agrees is ``consistent-with-journal``. The
    point is ranked on the ``users_at_slo`` board only against the same SLO and profile. The hash
    is checked on the JSON as sent (a result an older rigbook wrote keeps its hash)."""
    accepted = repo.add_capacity(sessions, slug, result, writer_name, given, signed)
    written(request).expire()
    return JSONResponse(
        accepted.model_dump(mode="json"), status_code=200 if accepted.duplicate else 201
    )


class KeyBody(BaseModel):
    """A public key to register: base64 of its 32 raw ed25519 bytes (`rigbook key show --json`)."""

    public_key: str


@router.post(
    "/keys",
    response_model=KeyRegistered,
    status_code=201,
    responses={
        200: {"model": KeyRegistered, "description": "Registered to this token before."},
        **answers(*WRITE_STATUSES),
    },
)
def post_key(body: KeyBody, sessions: Sessions, writer_name: Writer) -> JSONResponse:
    """Register a signing key to the token that sends it: results this token publishes signed by it
    are verified with it. A key registered to another token, or revoked, is refused (E_INPUT)."""
    done = register_key(sessions, writer_name, body.public_key)
    return JSONResponse(done.model_dump(mode="json"), status_code=200 if done.existing else 201)


@router.get("/keys", response_model=list[KeyInfo], responses=answers(*WRITE_STATUSES))
def list_keys(sessions: Sessions, writer_name: Writer) -> list[KeyInfo]:
    """The keys registered to the token that asks, revoked ones included."""
    with sessions() as session:
        return token_keys(session, writer_name)


@router.get("/keys/{key_id}", response_model=KeyInfo, responses=answers(*READ_STATUSES))
def show_key(key_id: str, sessions: Sessions) -> KeyInfo:
    """One key by its id, public: its public key, its token, and when it was revoked, so a reader can
    check a signature and see who signed a measured point."""
    with sessions() as session:
        found = get_key(session, key_id)
    if found is None:
        raise ApiError(404, "E_INPUT", f"no key {key_id!r} on this hub", remedy=HTTP_REMEDY)
    return found


@router.post("/keys/{key_id}/revoke", response_model=KeyRevoked, responses=answers(*WRITE_STATUSES))
def post_revoke_key(
    request: Request, key_id: str, sessions: Sessions, writer_name: Writer
) -> KeyRevoked:
    """Revoke a key of this token: results it signs are refused from now on (E_KEY_REVOKED); the
    points it signed stay, marked ``signer_revoked_at`` in a new revision of their recipe."""
    done = revoke_key(sessions, writer_name, key_id)
    written(request).expire()
    return done


@router.get("/leaderboard.json", response_model=BoardPage, responses=answers(304, *READ_STATUSES))
def leaderboard(
    request: Request,
    sessions: Sessions,
    metric: Annotated[
        str,
        Query(
            max_length=64,
            description="What is ranked (a metric registered with the board).",
            json_schema_extra={"enum": sorted(METRICS)},
        ),
    ] = "decode_tok_s",
    scope: Annotated[
        str | None,
        Query(
            max_length=300,
            description="The metric's fixed terms, exactly; for users_at_slo 'SLO · profile "
            "NAME vN', the SLO in any term order, spacing or units.",
        ),
    ] = None,
    model: Annotated[str | None, Query(max_length=200, description="Model slug.")] = None,
    card: Annotated[
        str | None, Query(max_length=200, description="Words of the card's name.")
    ] = None,
    device_count: Annotated[int | None, Query(ge=0, le=repo.MAX_DEVICE_COUNT)] = None,
    concurrency: Annotated[int | None, Query(ge=0, le=10**6)] = None,
    evidence: Annotated[
        EvidenceFilter | None, Query(description="'measured' is both measured kinds.")
    ] = None,
    recipe: Annotated[
        str | None, Query(max_length=200, description="One recipe's numbers.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = BOARD_LIMIT,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Response:
    """The board a page at a time: grouped by model, hardware, scope and concurrency, measured before claimed,
    best first; each number with its rank among like numbers, its evidence, who published it and its
    conditions. The ETag changes with every write to the board."""
    if metric not in METRICS:
        raise ApiError(
            422,
            "E_INPUT",
            f"no metric {metric!r} on this board; known: {', '.join(sorted(METRICS))}",
            remedy=HTTP_REMEDY,
        )
    if scope is not None and metric == "users_at_slo":  # the SLO as written: its canonical scope
        scope = canonical_scope(scope)
    filters = BoardFilters(
        metric=metric,
        scope=scope,
        model=model,
        card=card,
        device_count=device_count,
        concurrency=concurrency,
        evidence=evidence,
        recipe=recipe,
    )
    etag = board_etag(written(request).version(), filters, limit, offset)
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return cached_answer(request, etag, None)
    boards: RankedBoards = request.app.state.boards
    found = boards.page(written(request).last_read(), filters, limit=limit, offset=offset)
    page = BoardPage(
        metric=metric,
        items=found.items,
        total=found.total,
        limit=limit,
        offset=offset,
        next=next_url(request, offset, len(found.items), found.total, limit),
    )
    return cached_answer(
        request,
        board_etag(found.version, filters, limit, offset),
        page.model_dump_json().encode(),
    )
