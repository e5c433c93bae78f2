"""Measured points: made from a published bench result, carried into every later revision of their recipe.

A recipe write cannot carry measured points (see :mod:`rigbook.hub.admission`),
so the ones results added would be lost with each new revision; the hub copies
them from the revision it replaces, unless the new revision moved to other
hardware (then they no longer describe it, and the revision's notes say how
many were left behind and why).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rigbook.hub.admission import MEASURED, fit_problems
from rigbook.hub.leaderboard import UNVERIFIED, VERIFIED
from rigbook.recipe.schema import PerfConditions, PerfPoint, Recipe


class Carried(BaseModel):
    """The measured points of the replaced revision: those kept, and why the others were not."""

    points: list[dict[str, Any]]
    left_behind: list[str]

    def note(self) -> str | None:
        """The line the new revision's notes get when points were left behind."""
        if not self.left_behind:
            return None
        return (
            f"{len(self.left_behind)} measured point(s) of earlier results not carried into this revision: "
            + "; ".join(self.left_behind)
        )


def measured_point(
    point: PerfPoint, digest: str, *, verified: bool, published_by: str, signed_by: str | None
) -> dict[str, Any]:
    """A result's point as the recipe carries it: ``measured``, its result named, no id of another database,
    whether the hub recomputed it from the result's requests (``evidence``), who published it and
    the key that signed the result (``signed_by``, when it was signed)."""
    data = point.model_dump(mode="json", exclude_unset=True)
    data.pop("id", None)
    data["claimed_by"] = MEASURED
    data["notes"] = f"{point.notes or 'rigbook bench'} (result {digest[:19]})"
    data["evidence"] = VERIFIED if verified else UNVERIFIED
    data["published_by"] = published_by
    if signed_by is not None:
        data["signed_by"] = signed_by
    return data


def carry_measured(previous: dict[str, Any], recipe: Recipe) -> Carried:
    """The measured points of the ``previous`` record that still fit ``recipe``'s hardware."""
    kept, left = [], []
    no = (previous.get("revision") or {}).get("no")
    for i, point in enumerate(previous.get("perf_points") or []):
        if point.get("claimed_by") != MEASURED:
            continue
        conditions = PerfConditions.model_validate(point.get("conditions") or {})
        # Named by where it was (revision N's perf_points.i): its index in the new revision does not exist.
        problems = fit_problems(recipe, conditions, f"revision {no} perf_points.{i}.conditions")
        if problems:
            left += problems
        else:
            kept.append(point)
    return Carried(points=kept, left_behind=left)
