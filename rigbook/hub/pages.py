"""Server-rendered pages: search (``/``), one recipe (``/r/{slug}``) and the leaderboard.

Jinja2 autoescaping is on for every template, so anything a user wrote is
shown as text; the charts are built by :mod:`rigbook.hub.chart` and
:mod:`rigbook.hub.result_charts`, which escape their own text, and are the only
markup marked safe.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from sqlalchemy.orm import Session

from rigbook.hub import repository as repo
from rigbook.hub.api import cached_answer
from rigbook.hub.boards import RankedBoards
from rigbook.hub.chart import perf_chart
from rigbook.hub.display import shown_conditions, tok_s
from rigbook.hub.leaderboard import (
    METRICS,
    SCOPE_JOIN,
    BoardFilters,
    BoardItem,
    canonical_scope,
    effective_conditions,
    evidence_of,
    hardware_label,
    is_capacity,
    is_measured,
    published_by,
    signer,
    signer_revoked_at,
    slo_scope,
)
from rigbook.hub.paths import PAGE_TYPE, page_etag, page_path
from rigbook.hub.reproductions import page_entries
from rigbook.hub.result_charts import Shelf, published_curves, result_charts
from rigbook.quality.claims import label, needle_claim, recipe_quality, score
from rigbook.recipe.load import parse_recipe
from rigbook.recipe.schema import PerfPoint

templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
)
templates.filters["tok_s"] = tok_s

router = APIRouter(include_in_schema=False)
BOARD_PAGE = 100


def render(name: str, status: int = 200, **context) -> HTMLResponse:
    return HTMLResponse(templates.get_template(name).render(**context), status_code=status)


def not_found(request: Request) -> HTMLResponse:
    """The page for an unknown path or recipe."""
    return render("not_found.html", 404, path=request.url.path)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, q: Annotated[str | None, Query(max_length=500)] = None) -> HTMLResponse:
    """Every recipe, or those matching the search words."""
    with request.app.state.sessions() as session:
        total, records = repo.list_records(session, repo.RecipeFilters(q=q), limit=200)
    rows = []
    for record in records:
        recipe = parse_recipe(record, record["slug"])
        rows.append(
            {
                "recipe": recipe,
                "hardware": hardware_label(recipe)[0],
                "decode": (record.get("speeds") or {}).get("decode_tok_s"),
                "measured": sum(1 for p in recipe.perf_points if is_measured(p)),
            }
        )
    return render("index.html", q=q or "", rows=rows, total=total)


@router.get("/r/{slug}", response_class=HTMLResponse)
def recipe_page(request: Request, slug: str) -> Response:
    """One recipe: launch command, requirements, chart and every point with its conditions.

    The page is the bytes the recipe's last write rendered (:mod:`rigbook.hub.prepared`); one
    that could not be prepared is rendered here, on each read.
    """
    found = (
        request.app.state.prepared.read(page_path(slug)) if repo.SLUG_RE.fullmatch(slug) else None
    )
    if found is not None:
        return cached_answer(request, found.etag, found.body, found.content_type)
    with request.app.state.sessions() as session:
        record = repo.get_record_text(session, slug)
        if record is None:
            return not_found(request)
        return HTMLResponse(render_page(session, slug, record[2]))


def render_page(session: Session, slug: str, text: str) -> bytes:
    """The page of ``slug`` from its latest record's JSON ``text``, as ``session`` sees it."""
    return recipe_html(
        slug, json.loads(text), repo.revisions(session, slug) or [], published_curves(session, slug)
    ).encode()


def slo_terms(slo: str | None) -> list[str]:
    """An SLO's terms as a person reads them ('≥ 5 tok/s each', 'TTFT p90 ≤ 5 s'); the text as
    written when this version cannot read it."""
    from rigbook.capacity.slo import parse_slo
    from rigbook.errors import InputError

    try:
        return [t.phrase() for t in parse_slo(slo or "").terms]
    except InputError:
        return [slo or "no SLO stated"]


def slo_label(term: str | None) -> str | None:
    """A term's name as the sentence says it ('TTFT p90'), else as given."""
    from rigbook.capacity.slo import KINDS

    return KINDS[term].label if term in KINDS else term


def signer_of(point: PerfPoint) -> str | None:
    """Who signed a measured point's result, as the page says it ('signed ed25519:…', with 'key
    revoked …' once revoked, or 'unsigned'); None for a claim."""
    if not is_measured(point):
        return None
    kid, revoked = signer(point), signer_revoked_at(point)
    if kid is None:
        return "unsigned"
    return f"signed {kid}" + (f", key revoked {revoked}" if revoked else "")


def recipe_html(slug: str, record: dict, history: list, shelf: Shelf) -> str:
    recipe = parse_recipe(record, slug)
    points = [
        {
            "point": p,
            "measured": is_measured(p),
            "evidence": evidence_of(p),
            "by": published_by(p),
            "signer": signer_of(p),
            "conditions": shown_conditions(effective_conditions(recipe, p)),
        }
        for p in recipe.perf_points
        if p.quality is None and needle_claim(p) is None and not is_capacity(p)
    ]
    capacity = [
        {
            "point": p,
            "evidence": evidence_of(p),
            "by": published_by(p),
            "signer": signer_of(p),
            "terms": slo_terms(p.slo),
            "slo": slo_scope(p.slo, p.slo_profile).partition(SCOPE_JOIN)[0],
            "binding": slo_label(p.slo_binding),
            "board": "/leaderboard?"
            + urlencode({"metric": "users_at_slo", "scope": slo_scope(p.slo, p.slo_profile)}),
            "conditions": shown_conditions(effective_conditions(recipe, p)),
        }
        for p in recipe.perf_points
        if p.users_at_slo is not None
    ]
    quality = [{"point": p, "label": label(p), "score": score(p)} for p in recipe_quality(recipe)]
    return templates.get_template("recipe.html").render(
        recipe=recipe,
        record=record,
        hardware=hardware_label(recipe)[0],
        launch=shlex.join(recipe.config.launch),
        chart=Markup(perf_chart(recipe)),
        points=points,
        capacity=capacity,
        quality=quality,
        revisions=list(reversed(history)),
        result_charts=result_charts(shelf),
        reproductions=page_entries(record),
    )


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    model: Annotated[str | None, Query(max_length=200)] = None,
    card: Annotated[str | None, Query(max_length=200)] = None,
    metric: Annotated[str, Query(max_length=64)] = "decode_tok_s",
    scope: Annotated[str | None, Query(max_length=300)] = None,
    page: Annotated[int, Query(ge=1, le=10**6)] = 1,
) -> Response:
    """The leaderboard a page at a time, one table per model, hardware, scope and concurrency:
    for ``metric=users_at_slo`` one per model, hardware, SLO and profile."""
    if metric not in METRICS:
        return render("not_found.html", 404, path=request.url.path)
    scope = scope or None
    if scope is not None and metric == "users_at_slo":
        scope = canonical_scope(scope)
    filters = BoardFilters(model=model, card=card, metric=metric, scope=scope)
    boards: RankedBoards = request.app.state.boards
    found = boards.page(
        request.app.state.version.version(),
        filters,
        limit=BOARD_PAGE,
        offset=(page - 1) * BOARD_PAGE,
    )
    body = board_html(filters, page, found.total, found.items)
    return cached_answer(request, page_etag(body), body, PAGE_TYPE)


def board_html(filters: BoardFilters, page: int, total: int, items: list[BoardItem]) -> bytes:
    """Page ``page`` of the board ``filters`` select: ``items`` of ``total``."""
    groups: dict[tuple, list] = {}
    for item in items:
        groups.setdefault(
            (item.model_name, item.hardware, item.scope, item.concurrency), []
        ).append(item)
    pages = max(1, -(-total // BOARD_PAGE))
    return (
        templates.get_template("leaderboard.html")
        .render(
            groups=groups,
            pairs=shown_conditions,
            metric=METRICS[filters.metric],
            metrics=METRICS,
            scope=filters.scope or "",
            page=page,
            pages=pages,
            model=filters.model or "",
            card=filters.card or "",
        )
        .encode()
    )
