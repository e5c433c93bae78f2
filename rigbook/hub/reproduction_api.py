"""API v1 for reproductions: publish one, and read a reproduction or the bench result it stands on."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response

from rigbook.bench.result import BENCH_KIND, BenchResult
from rigbook.hub.api import (
    CACHE_CONTROL,
    READ_STATUSES,
    RESULT_STATUSES,
    ApiError,
    GivenJson,
    Sessions,
    Signed,
    Writer,
    answers,
    read_limit,
    written,
)
from rigbook.hub.llmd import llmd_json
from rigbook.hub.reproductions import add_reproduction, stored_reproduction, stored_result
from rigbook.hub.schemas import ReproductionAccepted
from rigbook.reproduce.document import ReproductionDocument

FORMATS = ("rigbook", "llm-d")

router = APIRouter(prefix="/api/v1", tags=["v1"], dependencies=[Depends(read_limit)])


@router.post(
    "/recipes/{slug}/reproductions",
    response_model=ReproductionAccepted,
    status_code=201,
    responses={
        200: {"model": ReproductionAccepted, "description": "Published before: nothing added."},
        **answers(*RESULT_STATUSES),
    },
)
def post_reproduction(
    request: Request,
    slug: str,
    document: ReproductionDocument,
    given: GivenJson,
    sessions: Sessions,
    writer_name: Writer,
    signed: Signed,
) -> JSONResponse:
    """Add a reproduction of one revision of the recipe (`rigbook reproduce --publish`): the revision
    named by its content hash, the bench result (published to this recipe first) by its hash. The hub
    recomputes each row (claim, measured rate and its interval, ratio, call) and the verdict from
    them and refuses a document that differs (E_REPRODUCTION_REFUSED, every difference listed). The
    reproduction joins the record's ``reproductions`` in a new revision."""
    accepted = add_reproduction(sessions, slug, document, writer_name, given, signed)
    written(request).expire()
    return JSONResponse(
        accepted.model_dump(mode="json"), status_code=200 if accepted.duplicate else 201
    )


def _stored(text: str | None, what: str) -> Response:
    if text is None:
        raise ApiError(404, "E_RECIPE_NOT_FOUND", f"no {what} on this hub")
    return Response(text, media_type="application/json", headers={"Cache-Control": CACHE_CONTROL})


@router.get("/recipes/{slug}/results/{content_hash}.json", responses=answers(*READ_STATUSES))
def get_result(
    slug: str,
    content_hash: str,
    sessions: Sessions,
    shape: Annotated[
        str,
        Query(
            alias="format",
            max_length=32,
            json_schema_extra={"enum": list(FORMATS)},
            description="'rigbook': the result as it was sent; 'llm-d': one llm-d Benchmark "
            "Report v0.2 per cell that could be a perf point, as a JSON array (docs/hub.md).",
        ),
    ] = "rigbook",
) -> Response:
    """A bench result published to the recipe, as it was sent (a reproduction's evidence), or in
    llm-d's Benchmark Report schema so other tools can read it."""
    if shape not in FORMATS:
        raise ApiError(  # as the leaderboard answers an unknown metric
            422,
            "E_INPUT",
            f"no result format {shape!r}; known: {', '.join(FORMATS)}",
            remedy="Ask for format=rigbook (the result as published) or format=llm-d.",
        )
    with sessions() as session:
        found = stored_result(session, slug, content_hash)
    if found is not None and shape == "llm-d":
        found = llmd_json(_stored_bench(found, content_hash)).decode()
    return _stored(found, f"result {content_hash!r} of recipe {slug!r}")


def _stored_bench(body: str, content_hash: str) -> BenchResult:
    """A stored result as a bench result, for the llm-d export: a capacity result, or a body an
    older rigbook stored that this one no longer reads, is refused by name, never a 500."""
    try:
        kind = json.loads(body).get("kind")
        if kind != BENCH_KIND:
            raise ValueError(f"it is a {kind!r} result")
        return BenchResult.model_validate_json(body)
    except (ValueError, AttributeError) as exc:  # pydantic's ValidationError is a ValueError
        reason = str(exc).splitlines()[0]
        raise ApiError(
            422,
            "E_INPUT",
            f"result {content_hash!r} has no llm-d form: {reason}",
            remedy="Ask for format=rigbook: the llm-d export takes bench results only.",
        ) from None


@router.get(
    "/recipes/{slug}/reproductions/{content_hash}.json",
    response_model=ReproductionDocument,
    responses=answers(*READ_STATUSES),
)
def get_reproduction(slug: str, content_hash: str, sessions: Sessions) -> Response:
    """A reproduction of the recipe, as it was posted (its signature covers this document)."""
    with sessions() as session:
        found = stored_reproduction(session, slug, content_hash)
    return _stored(found, f"reproduction {content_hash!r} of recipe {slug!r}")
