"""The document `rigbook reproduce` leaves as ``reproduction.json`` (kind ``rigbook.reproduction``)
and its verdict rows. Models only, so the one loader (:mod:`rigbook.results`) can name it;
:mod:`rigbook.reproduce` fills them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rigbook.bench.intervals import Interval

Call = Literal[
    "real difference", "within spread", "no interval", "not comparable", "not measured", "no claim"
]

Verdict = Literal["holds", "does not hold", "inconclusive"]


class VerdictRow(BaseModel):
    """One claim (or, with no claim, one measured level) and what the rig did against it."""

    concurrency: int
    rate: str | None = Field(default=None, description="The rate definition compared.")
    claim_tok_s: float | None = None
    measured_tok_s: float | None = None
    interval: Interval | None = Field(
        default=None, description="The measured rate's 95 % interval."
    )
    ratio_pct: float | None = Field(
        default=None, description="Measured as a percentage of the claim."
    )
    call: Call
    differs: list[str] = Field(
        default_factory=list, description="Conditions that differ between the claim and this run."
    )
    differing: list[str] = Field(
        default_factory=list, description="The names of those conditions, for a table cell."
    )
    not_comparable: list[str] = Field(
        default_factory=list, description="Why the ratio does not count, where it does not."
    )


class Reproduction(BaseModel):
    """What a reproduction found, and where it left its files."""

    kind: Literal["rigbook.reproduction"] = "rigbook.reproduction"
    recipe: str
    recipe_revision: int | None = None
    recipe_hash: str | None = Field(
        default=None, description="Content hash of the recipe whose claims were compared."
    )
    folder: str
    url: str
    model: str | None = None
    launch: str | None = Field(default=None, description="The launch this run started and stopped.")
    profile: str
    levels: list[int]
    max_tokens: int
    ci_target_pct: float
    assumed: list[str]
    rows: list[VerdictRow]
    verdict: Verdict = Field(
        default="inconclusive", description="The claims in one word (rigbook.reproduce.verdict)."
    )
    contrast: str | None = Field(
        default=None, description="One request alone against the most at once."
    )
    result: str = Field(description="The bench result file.")
    comparison: str | None = Field(
        default=None, description="The comparison with the claims, if any."
    )
    report: str = Field(description="The bench report (Markdown, with plots beside it).")
    cut_short: bool = False
    verdict_error: dict | None = Field(
        default=None,
        description="Why the bench does not count (failed requests), when it does not.",
    )
