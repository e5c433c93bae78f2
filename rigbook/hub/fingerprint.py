"""A run's fingerprint: what its requests were, not when they ran.

A result's content hash changes with any edit, so a run published again with its start moved a day,
its recipe slug nulled or rewritten, or one request's time nudged by a nanosecond hashes anew. The
fingerprint leaves those out: for a result that carries its requests (``requests`` anywhere in it: a
bench result's cells, a capacity result's probes), it is each request's content (cell, order,
prompt, token counts, outcome) and its times as fractions of its cell's span (first send to last
stamp), to 1/10,000: the same whether the run is moved in time, one stamp nudged, or every timing
scaled (a rate x 100 on the same requests is the same run);
for one without, it is the whole result without its times, hash, URL and recipe. The hub keeps one
result per fingerprint, so one run counts once, on one recipe.

Two honest runs differ in the shape of their timings over every request.
"""

from __future__ import annotations

import math
from typing import Any

from rigbook.hashing import content_hash

# Fields a publisher can change without changing the run.
UNBOUND_KEYS = frozenset(
    {
        "content_hash",
        "started_at",
        "finished_at",
        "recipe_slug",
        "recipe_revision",
        "url",
        "journal",
        "signature",
    }
)
REQUEST_CONTENT = (
    "cell",
    "index",
    "prompt_index",
    "warmup",
    "prompt_tokens",
    "output_tokens",
    "reasoning_tokens",
    "chunks",
    "token_source",
    "finish_reason",
    "ok",
)
REQUEST_TIMES = ("sent_s", "first_token_s", "first_content_s", "last_token_s", "done_s")


def _requests(value: Any) -> list[dict[str, Any]]:
    """Every request record in a result's JSON, in document order."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("requests", "warmup") and isinstance(item, list):
                found += [r for r in item if isinstance(r, dict) and "sent_s" in r]
            else:
                found += _requests(item)
    elif isinstance(value, list):
        for item in value:
            found += _requests(item)
    return found


def _without_unbound(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_unbound(v) for k, v in value.items() if k not in UNBOUND_KEYS}
    if isinstance(value, list):
        return [_without_unbound(v) for v in value]
    return value


SHAPE_STEPS = 10_000


def _stamps(requests: list[dict[str, Any]]) -> list[float]:
    return [
        v
        for r in requests
        for v in (r.get(k) for k in REQUEST_TIMES)
        if isinstance(v, (int, float)) and math.isfinite(v)
    ]


def _shape(value: Any, origin: float, span: float) -> int | None:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return round((value - origin) / span * SHAPE_STEPS)


def _shapes(requests: list[dict[str, Any]]) -> list[list[Any]]:
    """Each request's content and its timings as fractions of its cell's span (a cell's clock may
    start anew)."""
    cells: dict[Any, list[dict[str, Any]]] = {}
    for r in requests:
        cells.setdefault((r.get("warmup"), r.get("cell")), []).append(r)
    rows = []
    for group in cells.values():
        stamps = _stamps(group)
        origin = min(stamps) if stamps else 0.0
        span = (max(stamps) - origin) if stamps else 0.0
        rows += [
            [r.get(k) for k in REQUEST_CONTENT]
            + [_shape(r.get(k), origin, span) if span > 0 else None for k in REQUEST_TIMES]
            for r in group
        ]
    return rows


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def run_fingerprint(body: dict[str, Any]) -> str:
    """``sha256:…`` of the run ``body`` (a result's JSON) describes, without its times and recipe."""
    conditions = _object(body.get("conditions"))
    requests = _requests(body)
    if requests:
        profile = _object(conditions.get("profile"))
        content: Any = {
            "model": conditions.get("model"),
            "profile": profile.get("content_hash"),
            "requests": _shapes(requests),
        }
    else:
        content = _without_unbound(body)
    return content_hash(content)
