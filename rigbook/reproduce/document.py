"""A reproduction as it is published: the verdict on a recipe revision's claims, with what it stands on.

The document names the recipe revision it reproduced (by its content hash), the bench result it
measured (by its content hash: the evidence, published to the same recipe first), the
conditions it ran under, and each claim against the measured rate with its interval. The hub
recomputes the rows and the verdict from the stored result and the named revision, with the code
here and in :mod:`rigbook.reproduce.verdict`, and refuses a document whose numbers or verdict
differ (:func:`recompute`). A signature (:mod:`rigbook.hub.signing`) covers the document's content
hash, so the verdict too, and its rig summary.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.result import BenchResult
from rigbook.compare.sources import source_from_result
from rigbook.errors import InputError
from rigbook.hashing import content_hash
from rigbook.recipe.schema import Recipe
from rigbook.reproduce.claims import plan_claims
from rigbook.reproduce.verdict import overall, verdict_rows
from rigbook.reproduction import Verdict, VerdictRow

MAX_ROWS = 64
MAX_TEXT = 2000


class ReproductionConditions(BaseModel):
    """What the reproduction ran on, as its bench result says (the hub checks they agree)."""

    model_config = ConfigDict(extra="forbid")

    card: str | None = Field(default=None, max_length=200)
    gpu_count: int | None = Field(default=None, ge=0, le=1_000_000)
    power_limit_w_per_gpu: float | None = Field(default=None, ge=0)
    engine: str | None = Field(default=None, max_length=200)
    engine_version: str | None = Field(default=None, max_length=200)
    quant: str | None = Field(default=None, max_length=200)
    workload: str | None = Field(default=None, max_length=200)
    rig: dict[str, Any] | None = Field(
        default=None, description="The result's rig summary (the signature covers its hash)."
    )


class ReproductionDocument(BaseModel):
    """A reproduction of one recipe revision, as `rigbook reproduce --publish` sends it."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["rigbook.reproduction.published"] = "rigbook.reproduction.published"
    version: Literal[1] = 1
    recipe: str = Field(max_length=200, description="The recipe's slug.")
    recipe_hash: str = Field(
        max_length=80, description="Content hash of the revision reproduced (its claims)."
    )
    result_hash: str = Field(
        max_length=80, description="Content hash of the bench result: the evidence."
    )
    profile: str = Field(max_length=200)
    levels: list[int] = Field(max_length=MAX_ROWS)
    max_tokens: int = Field(ge=1, le=10**7)
    assumed: list[Annotated[str, Field(max_length=MAX_TEXT)]] = Field(
        default_factory=list, max_length=MAX_ROWS
    )
    conditions: ReproductionConditions
    rows: list[VerdictRow] = Field(max_length=MAX_ROWS)
    verdict: Verdict
    content_hash: str | None = Field(
        default=None, description="sha256 of the document's canonical JSON without this field."
    )

    def with_hash(self) -> ReproductionDocument:
        return self.model_copy(update={"content_hash": document_hash(self)})


def document_hash(doc: ReproductionDocument | dict[str, Any]) -> str:
    """The content hash of a document (or its JSON as posted) without its ``content_hash``."""
    body = doc if isinstance(doc, dict) else doc.model_dump(mode="json")
    return content_hash({k: v for k, v in body.items() if k != "content_hash"})


def conditions_of(result: BenchResult) -> ReproductionConditions:
    """The conditions a reproduction states: those of its result's first measured point."""
    measured = source_from_result("evidence", result)
    c = measured.points[0].conditions if measured.points else None
    rig = result.conditions.rig
    return ReproductionConditions(
        card=c.card if c else None,
        gpu_count=c.gpu_count if c else None,
        power_limit_w_per_gpu=c.power_limit_w_per_gpu if c else None,
        engine=c.engine if c else None,
        engine_version=c.engine_version if c else None,
        quant=c.quant if c else None,
        workload=c.workload if c else None,
        rig=rig.model_dump(mode="json") if rig is not None else None,
    )


def judged_rows(
    recipe: Recipe, result: BenchResult, *, profile: str, levels: list[int], max_tokens: int
) -> tuple[list[VerdictRow], list[str]]:
    """The verdict rows of ``result`` against ``recipe``'s claims read as `reproduce` reads them,
    and what was assumed."""
    plan = plan_claims(recipe, recipe.slug, profile=profile, levels=levels, max_tokens=max_tokens)
    measured = source_from_result("evidence", result)
    rows, _ = verdict_rows(result, measured, plan.claims)
    return rows, plan.assumed


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _row_differences(i: int, given: VerdictRow, found: VerdictRow) -> list[str]:
    out = []
    for name in ("concurrency", "rate", "call"):
        if getattr(given, name) != getattr(found, name):
            out.append(
                f"rows.{i}.{name}: {getattr(given, name)!r}, recomputed {getattr(found, name)!r}"
            )
    for name in ("claim_tok_s", "measured_tok_s", "ratio_pct"):
        if not _close(getattr(given, name), getattr(found, name)):
            out.append(
                f"rows.{i}.{name}: {getattr(given, name)}, recomputed {getattr(found, name)}"
            )
    gi, fi = given.interval, found.interval
    for name in ("low", "high"):
        a = getattr(gi, name) if gi else None
        b = getattr(fi, name) if fi else None
        if not _close(a, b):
            out.append(f"rows.{i}.interval.{name}: {a}, recomputed {b}")
    return out


def recompute(
    doc: ReproductionDocument, recipe: Recipe, result: BenchResult
) -> tuple[list[VerdictRow], list[str]]:
    """The rows as recomputed from ``result`` against ``recipe`` (the revision the document names),
    and every way the document differs from them (empty: it is consistent with its numbers)."""
    problems = []
    try:
        rows, _ = judged_rows(
            recipe, result, profile=doc.profile, levels=doc.levels, max_tokens=doc.max_tokens
        )
    except InputError as exc:
        return [], [f"profile/levels: {exc.message}"]
    ran = result.conditions.profile
    if ran is not None and ran.name != doc.profile:
        problems.append(f"profile: {doc.profile!r}, the bench result ran {ran.name!r}")
    stated = conditions_of(result)
    if doc.conditions != stated:
        problems.append(
            "conditions: not those of the bench result "
            f"(result: {stated.model_dump(exclude={'rig'}, exclude_none=True)})"
        )
    if len(doc.rows) != len(rows):
        problems.append(f"rows: {len(doc.rows)} given, {len(rows)} recomputed")
    else:
        for i, (given, found) in enumerate(zip(doc.rows, rows, strict=True)):
            problems += _row_differences(i, given, found)
    verdict = overall(rows)
    if doc.verdict != verdict:
        problems.append(f"verdict: {doc.verdict!r}, recomputed from the rows {verdict!r}")
    return rows, problems


def build_document(
    slug: str,
    recipe_hash: str,
    result: BenchResult,
    *,
    profile: str,
    levels: list[int],
    max_tokens: int,
    rows: list[VerdictRow],
    assumed: list[str],
) -> ReproductionDocument:
    """The hashed document of a reproduction whose bench wrote ``result``."""
    if not result.content_hash:
        raise InputError("E_RESULT_INVALID", "the bench result carries no content hash")
    return ReproductionDocument(
        recipe=slug,
        recipe_hash=recipe_hash,
        result_hash=result.content_hash,
        profile=profile,
        levels=levels,
        max_tokens=max_tokens,
        assumed=assumed,
        conditions=conditions_of(result),
        rows=rows,
        verdict=overall(rows),
    ).with_hash()
