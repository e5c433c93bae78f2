"""The leaderboard: per model and hardware, decode tok/s at each concurrency, claimed and measured apart.

Each entry carries the conditions it was measured under: for a measured point,
what its bench result recorded and nothing else; for a claim, the point's own
``conditions`` over the recipe's (GPU count, card, power limit, engine, quant …).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from rigbook.hub.admission import MEASURED
from rigbook.recipe.schema import PerfPoint, Recipe


class BoardEntry(BaseModel):
    """One number on the board, with where it came from and its conditions."""

    recipe: str
    revision: int | None
    title: str
    decode_tok_s: float
    per_request_decode_tok_s_median: float | None = None
    claimed_by: str | None
    notes: str | None = None
    conditions: dict[str, Any]


class BoardRow(BaseModel):
    """One concurrency level of one model on one hardware."""

    concurrency: int
    measured: list[BoardEntry] = Field(default_factory=list)
    claimed: list[BoardEntry] = Field(default_factory=list)


class BoardGroup(BaseModel):
    """A model on a hardware configuration."""

    model: str
    model_name: str
    hardware: str
    card: str
    device_count: int
    rows: list[BoardRow]


class Leaderboard(BaseModel):
    groups: list[BoardGroup]


def is_measured(point: PerfPoint) -> bool:
    """Measured by a bench run the hub checked (anything else is a claim)."""
    return point.claimed_by == MEASURED


def effective_conditions(recipe: Recipe, point: PerfPoint) -> dict[str, Any]:
    """The conditions of ``point``, unknown ones left out.

    A measured point has exactly what its result recorded: filling a gap from the recipe would show the recipe's
    card or power limit for a run that never had them. A claim has the recipe's, overridden by the point's own.
    """
    own = point.conditions.model_dump(mode="json", exclude_none=True) if point.conditions is not None else {}
    if is_measured(point):
        return own
    ext = recipe.ext
    base: dict[str, Any] = {
        "gpu_count": recipe.gpu_count,
        "card": recipe.hardware[0].card if recipe.hardware else "CPU",
        "power_limit_w_per_gpu": ext.power_limit_w_per_gpu,
        "engine": recipe.engine,
        "engine_version": ext.engine_version,
        "quant": recipe.models[0].quant if recipe.models else None,
        "kv_cache_dtype": ext.kv_cache_dtype,
        "speculative_method": ext.speculative.method if ext.speculative else None,
    }
    return {k: v for k, v in (base | own).items() if v is not None}


def condition_pairs(conditions: dict[str, Any]) -> list[tuple[str, Any]]:
    """Conditions as flat ``(name, value)`` pairs for display (``sampling.temperature`` …)."""
    pairs = []
    for key, value in conditions.items():
        if isinstance(value, dict):
            pairs += [(f"{key}.{k}", v) for k, v in value.items()]
        else:
            pairs.append((key, value))
    return pairs


def hardware_label(recipe: Recipe) -> tuple[str, str, int]:
    """``(label, card, device count)``, e.g. ``("2x RTX PRO 6000 Blackwell Max-Q", …, 2)``; CPU when none."""
    if not recipe.hardware:
        return "CPU", "CPU", 0
    card = recipe.hardware[0].card
    return f"{recipe.gpu_count}x {card}", card, recipe.gpu_count


def build_leaderboard(recipes: list[Recipe]) -> Leaderboard:
    """Group every point with a decode rate and a concurrency by (model, hardware) and concurrency."""
    groups: dict[tuple[str, str, int], dict[str, Any]] = {}
    for recipe in recipes:
        model = recipe.models[0] if recipe.models else None
        label, card, count = hardware_label(recipe)
        key = (model.slug if model else recipe.slug, card, count)
        group = groups.setdefault(key, {"model": key[0], "model_name": model.name if model else recipe.title,
                                        "hardware": label, "card": card, "device_count": count, "rows": {}})
        for point in recipe.perf_points:
            if point.decode_tok_s is None or point.concurrency is None:
                continue
            row = group["rows"].setdefault(point.concurrency, BoardRow(concurrency=point.concurrency))
            entry = BoardEntry(recipe=recipe.slug, revision=recipe.revision.no if recipe.revision else None,
                               title=recipe.title, decode_tok_s=point.decode_tok_s,
                               per_request_decode_tok_s_median=point.per_request_decode_tok_s_median,
                               claimed_by=point.claimed_by, notes=point.notes,
                               conditions=effective_conditions(recipe, point))
            (row.measured if is_measured(point) else row.claimed).append(entry)
    out = []
    for key in sorted(groups):
        g = groups[key]
        rows = [g["rows"][c] for c in sorted(g["rows"])]
        for row in rows:
            row.measured.sort(key=lambda e: -e.decode_tok_s)
            row.claimed.sort(key=lambda e: -e.decode_tok_s)
        if rows:
            out.append(BoardGroup(**{**g, "rows": rows}))
    return Leaderboard(groups=out)
