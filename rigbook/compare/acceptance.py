"""Speculative decoding in a comparison: how much of a rate gap the drafter's acceptance accounts for.

With a drafter, one target step emits the drafted tokens it accepted plus its own: the mean
acceptance length L, tokens per step. Two setups whose target steps run at the same rate differ in
tok/s by L_A / L_B, so a measured ratio r = rate_A / rate_B splits into the acceptance ratio
L_A / L_B and the step-rate ratio r / (L_A / L_B), which is what the rig, engine and setup account
for. On a log scale the acceptance ratio's share of the gap is ln(L_A / L_B) / ln(r).

It is a first-order split: steps that carried no draft emit one token, and drafting costs time of
its own, so the step rate holds both. A side that states it runs no speculator emits one token per
step (L = 1); a side whose speculator is unknown, or that runs one with no acceptance stated, has
no L, and then the rate gap cannot be told apart from acceptance.
"""

from __future__ import annotations

import math

from rigbook.bench.speculation import declared
from rigbook.compare.rules import CAVEAT, NC
from rigbook.comparison import AcceptanceGap, Aspect, ComparedPoint, Reason, Severity

# Two mean acceptance lengths within this fraction of each other are alike: a cell's own length
# moves by a few percent between runs of the same prompts (the engines sample the verification).
ACCEPTANCE_TOLERANCE = 0.05
CONDITION = "speculative_acceptance_length"
UNSEPARATED = "the comparison cannot separate rig speed from the drafter's acceptance"


def speculates(point: ComparedPoint) -> bool:
    """The point ran a speculator, by its stated method or by a stated acceptance above 1."""
    c = point.conditions
    return declared(c.speculative_method) or (
        c.speculative_acceptance_length is not None and c.speculative_acceptance_length > 1.0
    )


def length(point: ComparedPoint) -> float | None:
    """Tokens per target step: the stated acceptance, 1 where the point states no speculator, else None."""
    c = point.conditions
    if c.speculative_acceptance_length is not None:
        return c.speculative_acceptance_length
    if c.speculative_method is not None and not declared(c.speculative_method):
        return 1.0
    return None


def alike(a: float, b: float) -> bool:
    return abs(a - b) <= ACCEPTANCE_TOLERANCE * max(a, b)


def gap(a: ComparedPoint, b: ComparedPoint, decode_ratio_pct: float | None) -> AcceptanceGap | None:
    """Each side's acceptance and the split of the rate ratio, or None where neither side speculates."""
    if not (speculates(a) or speculates(b)):
        return None
    la, lb = length(a), length(b)
    if la is None or lb is None:
        return AcceptanceGap(a_mean_acceptance_length=la, b_mean_acceptance_length=lb)
    acceptance = la / lb
    step = share = None
    if decode_ratio_pct is not None and decode_ratio_pct > 0:
        step = decode_ratio_pct / acceptance
        r = decode_ratio_pct / 100.0
        share = 100.0 * math.log(acceptance) / math.log(r) if r != 1.0 else None
    return AcceptanceGap(
        a_mean_acceptance_length=la,
        b_mean_acceptance_length=lb,
        acceptance_ratio_pct=100.0 * acceptance,
        step_rate_ratio_pct=step,
        acceptance_share_pct=share,
    )


def _split(g: AcceptanceGap) -> str:
    """What the split says in words, after the two lengths."""
    text = f"at one step rate A would make {g.acceptance_ratio_pct:.1f}% of B's tok/s"
    if g.step_rate_ratio_pct is None:
        return text
    steps = f"A's target steps run at {g.step_rate_ratio_pct:.1f}% of B's rate"
    share = g.acceptance_share_pct
    if share is None:
        return f"{text}; {steps}"
    if share < 0:
        return f"{text}, but the gap runs the other way: {steps}"
    if share > 100:
        return f"{text}: acceptance more than accounts for the gap, {steps}"
    return f"{text}: acceptance accounts for {share:.0f}% of the gap (log scale), {steps}"


def reasons(g: AcceptanceGap | None) -> dict[Aspect, list[Reason]]:
    """The reasons an acceptance gap gives per aspect: a difference is a caveat for a throughput
    or efficiency ratio (the split says how much of it is acceptance) and not comparable for
    scaling (the ratio then mixes the factor with acceptance); an unknown is a caveat."""
    if g is None:
        return {}
    la, lb = g.a_mean_acceptance_length, g.b_mean_acceptance_length
    cost: dict[Aspect, Severity] = {"throughput": CAVEAT, "power_efficiency": CAVEAT}
    if la is not None and lb is not None:
        if alike(la, lb):
            return {}
        message = (
            f"mean acceptance length differs: {la:.2f} vs {lb:.2f} tokens per step; {_split(g)}"
        )
        cost["scaling"] = NC
    else:
        if la is None and lb is None:
            where = "both sides"
        else:
            side, other, known = ("A", "B", lb) if la is None else ("B", "A", la)
            where = f"{side} ({other}: {known:.2f} tokens per step)"
        message = f"mean acceptance length unknown on {where}: {UNSEPARATED}"
        cost["scaling"] = CAVEAT
    return {
        aspect: [
            Reason(
                condition=CONDITION,
                severity=severity,
                kind="acceptance",
                a=None if la is None else f"{la:.2f}",
                b=None if lb is None else f"{lb:.2f}",
                message=message
                + (
                    " (the ratio mixes the varied factor with acceptance)" if severity == NC else ""
                ),
            )
        ]
        for aspect, severity in cost.items()
    }
