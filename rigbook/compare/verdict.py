"""From rule outcomes to a verdict per aspect: raw throughput, power efficiency, retention/scaling.

- Every ``differs`` outcome costs what its rule says for the aspect; every unknown is a caveat.
- Power efficiency also needs measured energy on both sides; without it the aspect is not
  comparable whatever else holds, and the GPU-count and power-per-card differences are
  not comparable reasons too (a throughput ratio across them is no efficiency figure).
- Retention/scaling is judged only when a factor (GPU count, power per card) differs or is
  unknown; when both factors differ at once the ratio cannot be put down to either.
- Over a pair of sources, an aspect's figure is the geometric mean of its points' figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import geometric_mean

from rigbook.compare.rules import CAVEAT, NC, RULES_BY_NAME, Outcome
from rigbook.comparison import ASPECT_TITLES, Aspect, AspectVerdict, Reason, VerdictWord

ASPECTS: tuple[Aspect, ...] = ("throughput", "power_efficiency", "scaling")


def _message(outcome: Outcome) -> str:
    label = RULES_BY_NAME[outcome.rule].label
    if outcome.kind == "differs":
        return f"{label} differs: {outcome.a} vs {outcome.b}"
    if outcome.kind == "unknown_both":
        return f"{label} unknown on both sides"
    side, known = ("A", outcome.b) if outcome.a is None else ("B", outcome.a)
    return f"{label} unknown on {side} (the other side: {known})"


def _reason(outcome: Outcome, aspect: Aspect, energy_both: bool) -> Reason | None:
    """The reason one outcome gives for one aspect, or None when it costs nothing."""
    if outcome.kind == "equal":
        return None
    rule = RULES_BY_NAME[outcome.rule]
    if outcome.kind == "differs":
        severity = (rule.with_energy if energy_both else {}).get(aspect, rule.on_differ[aspect])
    else:
        severity = CAVEAT
    message = _message(outcome)
    if outcome.special and rule.special and aspect in rule.special.cost:
        severity = rule.special.cost[aspect]
        message += f" ({rule.special.why})"
    elif aspect == "scaling" and rule.factor and outcome.kind == "differs":
        message += " (the factor this ratio varies)"
    return Reason(
        condition=rule.name,
        severity=severity,
        kind=outcome.kind,
        a=outcome.a,
        b=outcome.b,
        message=message,
    )


def word(reasons: list[Reason]) -> VerdictWord:
    """The verdict reasons add up to."""
    if any(r.severity == NC for r in reasons):
        return "not comparable"
    return "comparable with caveats" if reasons else "comparable"


def _energy_reasons(a_tpw: float | None, b_tpw: float | None) -> list[Reason]:
    missing = [side for side, v in (("A", a_tpw), ("B", b_tpw)) if v is None]
    if not missing:
        return []
    where = "either side" if len(missing) == 2 else missing[0]
    return [
        Reason(
            condition="energy",
            severity=NC,
            kind="missing",
            message=f"no measured energy on {where}: tok/s per W needs an energy reading, a power limit is a cap, not a draw",
        )
    ]


def _two_factors(outcomes: list[Outcome]) -> list[Reason]:
    varied = [o for o in outcomes if RULES_BY_NAME[o.rule].factor and o.kind == "differs"]
    if len(varied) < 2:
        return []
    names = " and ".join(RULES_BY_NAME[o.rule].label for o in varied)
    return [
        Reason(
            condition="factors",
            severity=NC,
            kind="two_factors",
            message=f"{names} both change: the ratio cannot be put down to either, so it is no retention or scaling measure",
        )
    ]


def _ordered(reasons: list[Reason]) -> list[Reason]:
    """Not-comparable reasons first, each message once."""
    seen, out = set(), []
    for r in sorted(reasons, key=lambda r: r.severity != NC):
        if r.message not in seen:
            seen.add(r.message)
            out.append(r)
    return out


def aspect_verdicts(
    outcomes: list[Outcome],
    a_tpw: float | None,
    b_tpw: float | None,
    decode_ratio_pct: float | None,
    extra: Mapping[Aspect, list[Reason]] | None = None,
) -> list[AspectVerdict]:
    """The verdict per aspect for one lined-up pair of points; ``extra`` adds reasons no single
    rule gives (the drafter's acceptance, rigbook.compare.acceptance)."""
    energy_both = a_tpw is not None and b_tpw is not None
    scaling_applies = any(RULES_BY_NAME[o.rule].factor and o.kind != "equal" for o in outcomes)
    verdicts = []
    for aspect in ASPECTS:
        if aspect == "scaling" and not scaling_applies:
            continue
        reasons = [r for o in outcomes if (r := _reason(o, aspect, energy_both))]
        reasons += (extra or {}).get(aspect, [])
        figure = decode_ratio_pct
        if aspect == "power_efficiency":
            reasons += _energy_reasons(a_tpw, b_tpw)
            figure = 100.0 * a_tpw / b_tpw if a_tpw is not None and b_tpw else None
        if aspect == "scaling":
            reasons += _two_factors(outcomes)
        reasons = _ordered(reasons)
        verdicts.append(
            AspectVerdict(
                aspect=aspect,
                title=ASPECT_TITLES[aspect],
                verdict=word(reasons),
                figure_pct=figure,
                reasons=reasons,
            )
        )
    return verdicts


def summarise(per_point: list[list[AspectVerdict]]) -> list[AspectVerdict]:
    """One verdict per aspect over all points: the worst, with every reason once, and the mean figure."""
    out = []
    for aspect in ASPECTS:
        found = [v for vs in per_point for v in vs if v.aspect == aspect]
        if not found:
            continue
        reasons = _ordered([r for v in found for r in v.reasons])
        figures = [v.figure_pct for v in found if v.figure_pct is not None and v.figure_pct > 0]
        # Geometric, because these are ratios: the mean of A/B is then the inverse of the mean of B/A.
        # A zero figure (no tokens on A) has no logarithm, so it is left out and not counted.
        figure = geometric_mean(figures) if figures else None
        out.append(
            AspectVerdict(
                aspect=aspect,
                title=ASPECT_TITLES[aspect],
                verdict=word(reasons),
                reasons=reasons,
                figure_pct=figure,
                figure_points=len(figures) if figures else None,
            )
        )
    return out
