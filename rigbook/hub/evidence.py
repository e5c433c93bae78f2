"""Checking a result's numbers against its own journal: the per-request timings its cells carry.

A result's cells hold every request the bench sent (``cells[].requests``, the
journal's ``request`` lines). The hub rebuilds each cell from those records
with the bench's own code (:func:`rigbook.bench.metrics.build_cell`) and each
perf point from the rebuilt cell (:func:`rigbook.bench.assemble.perf_point`),
and compares them with what the result claims. Any disagreement refuses the
result, in its numbers or in the conditions a point takes from its run (sampling,
reply length, rig, engine); a point whose cell carries its requests and agrees is
``consistent-with-journal``; a point without them is ``measured-unverified``.
Consistency is all this proves: a journal can be forged consistently (scaled
timings), which :mod:`rigbook.hub.bounds` and the run's fingerprint limit.

Not checkable here: the request timestamps themselves (they are the client's
clock), and a sustained cell's window length beyond its own requests.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from rigbook.bench.assemble import perf_point
from rigbook.bench.metrics import build_cell
from rigbook.bench.result import BenchResult, Cell
from rigbook.recipe.schema import PerfPoint

REL_TOL = 1e-9
POINT_FIELDS = (
    "decode_tok_s",
    "prefill_tok_s",
    "ttft_ms",
    "per_request_decode_tok_s_median",
    "context_len",
)
# The conditions a point takes from its run (profile, rig, engine), not from what the publisher adds
# (quant, speculative method): a journal-backed point must state its run's, or it claims another run.
CONDITION_FIELDS = (
    "sampling",
    "reply_tokens",
    "reply_length_held",
    "thinking",
    "token_count_source",
    "workload",
    "gpu_count",
    "card",
    "power_limit_w_per_gpu",
    "engine",
    "engine_version",
)


class JournalCheck(BaseModel):
    """Which perf points the journal backs (by index), and every disagreement found."""

    verified: list[int]
    problems: list[str]


def _differences(claimed: Any, rebuilt: Any, where: str) -> list[str]:
    """Every leaf where two JSON values differ (numbers within a relative 1e-9)."""
    if isinstance(claimed, dict) and isinstance(rebuilt, dict):
        return [
            line
            for key in sorted(set(claimed) | set(rebuilt))
            for line in _differences(claimed.get(key), rebuilt.get(key), f"{where}.{key}")
        ]
    numbers = (int, float)
    if (
        isinstance(claimed, numbers)
        and isinstance(rebuilt, numbers)
        and not isinstance(claimed, bool)
    ):
        if math.isclose(claimed, rebuilt, rel_tol=REL_TOL, abs_tol=1e-12):
            return []
    elif claimed == rebuilt:
        return []
    return [f"{where}: claims {claimed!r}; its requests give {rebuilt!r}"]


def rebuild_cell(cell: Cell) -> Cell:
    """``cell`` computed afresh from its request records, with the bench's metric code."""
    window = (
        (0.0, cell.metrics.window_s) if cell.mode == "sustained" and cell.metrics.window_s else None
    )
    telemetry = cell.telemetry.model_copy(update={"energy_j_per_token": None, "tok_s_per_w": None})
    return build_cell(
        index=cell.index,
        mode=cell.mode,
        concurrency=cell.concurrency,
        records=cell.requests,
        requests_planned=cell.requests_planned,
        duration_s=cell.duration_s,
        window=window,
        telemetry=telemetry,
        client=cell.client,
        cut_short=cell.cut_short,
    )


def _cell_of(result: BenchResult, point: PerfPoint) -> Cell | None:
    """The valid cell a perf point restates: same concurrency, and the mode its notes name when several."""
    found = [
        c
        for c in result.cells
        if c.valid and not c.client_bound and c.concurrency == point.concurrency
    ]
    if len(found) > 1:
        found = [c for c in found if (point.notes or "").startswith(f"rigbook {c.mode}")]
    return found[0] if len(found) == 1 else None


def check_journal(result: BenchResult) -> JournalCheck:
    """Rebuild every cell that carries its requests and every perf point from them; compare with the claims."""
    problems: list[str] = []
    for i, cell in enumerate(result.cells):
        if not cell.requests:
            continue
        rebuilt = rebuild_cell(cell)
        where = f"cells.{i}"
        problems += _differences(
            cell.metrics.model_dump(mode="json"),
            rebuilt.metrics.model_dump(mode="json"),
            f"{where}.metrics",
        )
        problems += _differences(
            {"valid": cell.valid, "energy_j_per_token": cell.telemetry.energy_j_per_token},
            {"valid": rebuilt.valid, "energy_j_per_token": rebuilt.telemetry.energy_j_per_token},
            where,
        )
    verified = []
    for i, point in enumerate(result.perf_points):
        source = _cell_of(result, point)
        if source is None or not source.requests:
            continue
        recomputed = perf_point(rebuild_cell(source), result.conditions, {})
        found = _differences(
            {f: getattr(point, f) for f in POINT_FIELDS},
            {f: getattr(recomputed, f) for f in POINT_FIELDS},
            f"perf_points.{i}",
        )
        if point.conditions is not None and recomputed.conditions is not None:
            found += _differences(
                point.conditions.model_dump(mode="json", include=set(CONDITION_FIELDS)),
                recomputed.conditions.model_dump(mode="json", include=set(CONDITION_FIELDS)),
                f"perf_points.{i}.conditions",
            )
        problems += found
        if not found:
            verified.append(i)
    return JournalCheck(verified=verified, problems=problems)
