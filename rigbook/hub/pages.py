"""Server-rendered pages: search (``/``), one recipe (``/r/{slug}``) and the leaderboard.

Jinja2 autoescaping is on for every template, so anything a user wrote is
shown as text; the chart is built by :mod:`rigbook.hub.chart`, which escapes
its own text, and is the only markup marked safe.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from rigbook.hub import repository as repo
from rigbook.hub.chart import perf_chart
from rigbook.hub.display import shown_conditions, tok_s
from rigbook.hub.leaderboard import (
    build_leaderboard,
    effective_conditions,
    hardware_label,
    is_measured,
)
from rigbook.quality.claims import label, needle_claim, recipe_quality, score
from rigbook.recipe.load import parse_recipe

templates = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                        autoescape=select_autoescape(default=True, default_for_string=True))
templates.filters["tok_s"] = tok_s

router = APIRouter(include_in_schema=False)


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
        rows.append({"recipe": recipe, "hardware": hardware_label(recipe)[0],
                     "decode": (record.get("speeds") or {}).get("decode_tok_s"),
                     "measured": sum(1 for p in recipe.perf_points if is_measured(p))})
    return render("index.html", q=q or "", rows=rows, total=total)


@router.get("/r/{slug}", response_class=HTMLResponse)
def recipe_page(request: Request, slug: str) -> HTMLResponse:
    """One recipe: launch command, requirements, chart and every point with its conditions."""
    with request.app.state.sessions() as session:
        record = repo.get_record(session, slug)
        history = repo.revisions(session, slug)
    if record is None:
        return not_found(request)
    recipe = parse_recipe(record, slug)
    points = [{"point": p, "measured": is_measured(p), "conditions": shown_conditions(effective_conditions(recipe, p))}
              for p in recipe.perf_points if p.quality is None and needle_claim(p) is None]
    quality = [{"point": p, "label": label(p), "score": score(p)} for p in recipe_quality(recipe)]
    return render("recipe.html", recipe=recipe, record=record, hardware=hardware_label(recipe)[0],
                  launch=shlex.join(recipe.config.launch), chart=Markup(perf_chart(recipe)), points=points,
                  quality=quality, revisions=list(reversed(history or [])))


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard_page(request: Request) -> HTMLResponse:
    """The leaderboard as tables, one per model and hardware."""
    with request.app.state.sessions() as session:
        recipes = [parse_recipe(r, r["slug"]) for r in repo.all_records(session)]
    return render("leaderboard.html", board=build_leaderboard(recipes), pairs=shown_conditions)
