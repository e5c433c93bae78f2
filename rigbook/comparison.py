"""The comparison document `rigbook compare` writes (kind ``rigbook.compare``): sources, reasons,
verdicts, derived figures. Models only, so the one loader (:mod:`rigbook.results`) can name it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rigbook.recipe.schema import PerfConditions, PerfPoint

Aspect = Literal["throughput", "power_efficiency", "scaling"]
Severity = Literal["not_comparable", "caveat"]
VerdictWord = Literal["comparable", "comparable with caveats", "not comparable"]

ASPECT_TITLES: dict[str, str] = {
    "throughput": "raw throughput ratio",
    "power_efficiency": "power efficiency (tok/s per W)",
    "scaling": "retention / scaling",
}


class ComparedConditions(PerfConditions):
    """A point's conditions plus what a bench run states that the recipe record has no field for."""

    bench_mode: Literal["burst", "sustained"] | None = Field(
        default=None,
        description="rigbook bench mode: burst (N requests sent at once) or sustained (N kept in flight).",
    )
    bench_profile: str | None = Field(
        default=None, description="The bench profile as 'name vVERSION'; bench results only."
    )
    bench_profile_hash: str | None = Field(
        default=None, description="The bench profile's content hash; bench results only."
    )


class QualityPoint(PerfPoint):
    """A point as compare reads it: every condition resolved, none guessed.

    Quality points (needle, multiple choice) are lined up by their suite, not a concurrency."""

    conditions: ComparedConditions = Field(default_factory=ComparedConditions)


class ComparedPoint(QualityPoint):
    """A speed point as compare reads it."""

    # Only points with a concurrency can be lined up, so only those are read.
    concurrency: int = Field(ge=1)


class Source(BaseModel):
    """One argument of `rigbook compare`, resolved to perf points whose ``conditions`` are filled."""

    ref: str = Field(description="The argument as given.")
    kind: Literal["bench_result", "recipe", "capacity", "quality_result"]
    name: str = Field(description="Recipe slug, or the result file's name.")
    model: str | None = Field(default=None, description="Model slug or served model id.")
    content_hash: str | None = Field(
        default=None, description="A bench result's verified content hash."
    )
    workload: str | None = Field(
        default=None,
        description="Bench and capacity results: the workload they ran, 'name vN (hash)'.",
    )
    points: list[ComparedPoint]
    skipped: list[str] = Field(default_factory=list, description="Perf points left out, and why.")
    quality: list[QualityPoint] = Field(
        default_factory=list, description="Quality points (needle, multiple choice)."
    )


class Reason(BaseModel):
    """One condition that keeps a ratio from meaning what it seems to."""

    condition: str = Field(description="Rule name, e.g. gpu_count, power_limit_w_per_gpu, energy.")
    severity: Severity
    kind: Literal[
        "differs",
        "unknown_one_side",
        "unknown_both",
        "missing",
        "two_factors",
        "varied_factor",
        "acceptance",
    ]
    a: str | None = None
    b: str | None = None
    message: str


class AspectVerdict(BaseModel):
    """What one kind of reading of a pair of numbers is worth."""

    aspect: Aspect
    title: str
    verdict: VerdictWord
    figure_pct: float | None = Field(
        default=None,
        description="A's figure as a percentage of B's, where this aspect has one; over a pair of sources, "
        "the geometric mean of the points' figures.",
    )
    figure_points: int | None = Field(
        default=None,
        description="Over a pair of sources: how many points figure_pct is the mean of.",
    )
    reasons: list[Reason] = Field(default_factory=list)


class Roofline(BaseModel):
    """Decode against the memory-bandwidth ceiling: an upper bound on tok/s, and the measured share of it."""

    active_params: int
    bytes_per_param: float
    weight_bytes_per_step: float = Field(
        description="Active params x bytes per param: read once per decode step."
    )
    kv_bytes_per_token_read: float = Field(
        description="KV cache read per generated token per sequence (0 when not known)."
    )
    bandwidth_gb_s_total: float = Field(description="Per-card bandwidth x GPU count.")
    ceiling_tok_s: float = Field(
        description="Upper bound on aggregate decode tok/s at this concurrency."
    )
    pct_of_ceiling: float
    assumptions: list[str] = Field(default_factory=list)


class Derived(BaseModel):
    """Figures computed from one perf point, each only where it is valid."""

    decode_tok_s_per_gpu: float | None = None
    tok_s_per_w: float | None = Field(
        default=None, description="1 / measured energy per token; never from a power limit."
    )
    tok_s_per_w_unavailable: str | None = None
    roofline: Roofline | None = None
    roofline_unavailable: str | None = None


class Side(BaseModel):
    """One side of a lined-up pair: the point and what was derived from it."""

    point: ComparedPoint
    derived: Derived


class AcceptanceGap(BaseModel):
    """Speculative decoding in a lined-up pair: each side's tokens per target step, and how the
    rate ratio splits into acceptance and step rate (rigbook.compare.acceptance)."""

    a_mean_acceptance_length: float | None = Field(
        default=None,
        description="A's tokens per target step: its stated acceptance, 1 with no speculator, "
        "null when unknown.",
    )
    b_mean_acceptance_length: float | None = None
    acceptance_ratio_pct: float | None = Field(
        default=None,
        description="A's mean acceptance length as a percentage of B's: A's tok/s as a share of "
        "B's if both ran target steps at one rate.",
    )
    step_rate_ratio_pct: float | None = Field(
        default=None,
        description="The decode ratio over the acceptance ratio: A's rate of target steps as a "
        "percentage of B's, what the rig, engine and setup account for.",
    )
    acceptance_share_pct: float | None = Field(
        default=None,
        description="The acceptance ratio's share of the rate gap on a log scale, "
        "100 x ln(acceptance ratio) / ln(decode ratio); null when the rates are equal.",
    )


class PointPair(BaseModel):
    """Two points at the same concurrency (and context length, where both state one), with verdicts."""

    concurrency: int
    context_len: int | None
    a: Side
    b: Side
    decode_ratio_pct: float | None = Field(
        default=None, description="A's decode tok/s as a percentage of B's."
    )
    slo: str | None = Field(
        default=None, description="Two capacities: the SLO both were measured under."
    )
    users_ratio_pct: float | None = Field(
        default=None, description="Two capacities: A's users at the SLO as a percentage of B's."
    )
    per_gpu_ratio_pct: float | None = None
    same: list[str] = Field(
        default_factory=list, description="Conditions known on both sides and equal."
    )
    acceptance: AcceptanceGap | None = Field(
        default=None, description="Where either side runs a speculator: its acceptance, each side."
    )
    verdicts: list[AspectVerdict]


class QualityPair(BaseModel):
    """Two quality points of the same test, with a verdict and the score of each side."""

    test: str
    a_label: str
    b_label: str
    a_score: str
    b_score: str
    verdict: VerdictWord
    reasons: list[Reason] = Field(default_factory=list)


class PairComparison(BaseModel):
    """Source A against source B: every lined-up point and a verdict per aspect over all of them."""

    a: str
    b: str
    points: list[PointPair]
    unmatched_a: list[str] = Field(
        default_factory=list, description="A's points with no partner in B."
    )
    unmatched_b: list[str] = Field(default_factory=list)
    verdicts: list[AspectVerdict] = Field(
        description="Per aspect: the worst verdict over the points, every reason once."
    )
    quality: list[QualityPair] = Field(
        default_factory=list, description="Quality points of the same test, like for like."
    )


class Comparison(BaseModel):
    """The whole `rigbook compare` answer."""

    kind: Literal["rigbook.compare"] = "rigbook.compare"
    sources: list[Source]
    pairs: list[PairComparison]
