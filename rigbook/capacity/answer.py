"""The answer: users at the SLO, the cells around it, the binding term, the spread, one sentence.

And the answer as a perf point (``users_at_slo``) in the recipe record's ``perf_points`` shape,
so it travels wherever perf points do.
"""

from __future__ import annotations

import math
import statistics

from pydantic import BaseModel, Field

from rigbook.bench.assemble import perf_point
from rigbook.bench.result import BenchResult
from rigbook.capacity.search import ProbeOutcome, SearchSettings, bounds, unprobed_below
from rigbook.capacity.slo import KINDS, Slo, tail_share, unseen_tail
from rigbook.recipe.schema import PerfPoint


class Spread(BaseModel):
    """One term over every run of the boundary level."""

    term: str
    values: list[float | None]
    min: float | None = None
    max: float | None = None
    spread_pct: float | None = Field(default=None, description="(max - min) / median, in percent.")


class CapacityAnswer(BaseModel):
    """How many users the SLO holds for, and how sure that is."""

    users: int = Field(
        description="Highest concurrency every run of which met the SLO, below first_fail."
    )
    lower_bound: bool = Field(description="The true number may be higher (see lower_bound_why).")
    lower_bound_why: str | None = None
    complete: bool = Field(description="False when the search was stopped before it settled.")
    last_pass: int | None = Field(
        default=None, description="Cell index of the first run at `users`."
    )
    first_fail: int | None = Field(
        default=None, description="Cell index of the run that failed at the lowest failing level."
    )
    first_fail_concurrency: int | None = None
    boundary_cells: list[int] = Field(default_factory=list, description="Every run at `users`.")
    aggregate_tok_s: float | None = Field(
        default=None, description="Median over the boundary runs."
    )
    gpu_count: int = 0
    aggregate_tok_s_per_gpu: float | None = None
    binding: str | None = Field(
        default=None,
        description="The term that failed at first_fail (the worst, when several did).",
    )
    closest: str | None = Field(
        default=None, description="With no failing level: the term with least headroom at `users`."
    )
    unstable: bool = Field(
        default=False, description="A boundary re-run failed and lowered the answer."
    )
    confirmed: bool = Field(
        default=True,
        description="Every run the settings ask for at `users` was made (false when the search "
        "stopped after too many failed re-runs, and the answer rests on fewer).",
    )
    unprobed: list[int] = Field(
        default_factory=list,
        description="Levels below `users` that no probe ran (more than --checks).",
    )
    few_requests: list[str] = Field(
        default_factory=list,
        description="Terms that passed at or below `users` on fewer requests than their rule "
        "asks, each with the tail it could miss.",
    )
    spread: list[Spread] = Field(default_factory=list)
    sentence: str


def _gpu_count(bench: BenchResult) -> int:
    rig = bench.conditions.rig
    if rig is not None:
        return len(rig.gpus)
    return len(bench.telemetry.gpus) if bench.telemetry.available else 0


def _spread(slo: Slo, runs: list[ProbeOutcome]) -> list[Spread]:
    out = []
    for term in slo.terms:
        values = [next((r.value for r in o.readings if r.term == term.name), None) for o in runs]
        known = [v for v in values if v is not None]
        s = Spread(term=term.name, values=values)
        if known:
            mid = statistics.median(known)
            # One run has no spread: 0 % would claim a steadiness nothing measured.
            pct = 100.0 * (max(known) - min(known)) / mid if mid and len(known) > 1 else None
            s = s.model_copy(update={"min": min(known), "max": max(known), "spread_pct": pct})
        out.append(s)
    return out


def _worst(outcome: ProbeOutcome) -> str | None:
    failing = [r for r in outcome.readings if not r.passed]
    early = [r for r in failing if r.broken_early]
    if early:
        return early[0].term
    return (
        min(failing, key=lambda r: r.margin if r.margin is not None else float("-inf")).term
        if failing
        else None
    )


def amount(value: float, unit: str) -> str:
    """'13.1 s' for 13070 ms, '850 ms', '2.77 tok/s'."""
    if unit == "ms" and value >= 1000:
        return f"{value / 1000:.3g} s"
    return f"{value:.3g} {unit}"


def users(n: int) -> str:
    """'no user', '1 user', '12 users'."""
    return "no user" if n == 0 else "1 user" if n == 1 else f"{n} users"


def levels(values: list[int]) -> str:
    """'3, 5-7, 9' for [3, 5, 6, 7, 9]."""
    spans: list[list[int]] = []
    for c in sorted(values):
        if spans and spans[-1][1] == c - 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def few_requests(slo: Slo, supporting: list[ProbeOutcome]) -> list[str]:
    """For each percentile term that passed on fewer requests than its rule asks (in any run the
    answer rests on), the fewest it rested on and the tail that many could miss."""
    notes = []
    for term in slo.terms:
        share = tail_share(term)
        short = [
            (r.requests, o.concurrency, r.needed)
            for o in supporting
            for r in o.readings
            if r.term == term.name and r.requests is not None and r.needed is not None
            if r.requests < r.needed
        ]
        if share is None or not short:
            continue
        n, at, needed = min(short)
        common = max(1, math.floor(1.0 / unseen_tail(n)))
        notes.append(
            f"{KINDS[term.name].label} judged on {n} requests at {users(at)}, fewer than the "
            f"{needed} its rule asks for a {100 * share:g}% tail: a tail as common as 1 in "
            f"{common} could go unseen"
        )
    return notes


def sentence(
    slo: Slo,
    n: int,
    binding: str | None,
    lower_bound_why: str | None,
    failed: ProbeOutcome | None,
    notes: list[str] | None = None,
) -> str:
    """The line a person can paste, e.g. 'This rig serves 12 users at ≥ 20 tok/s each,
    TTFT p99 ≤ 2 s (binding: per-user rate).'"""
    shown = [t for t in slo.terms if not (t.name == "error_rate" and t.threshold == 0)]
    terms = ", ".join(t.phrase() for t in shown)
    who = f"at least {users(n)}" if lower_bound_why and n else users(n)
    text = f"This rig serves {who} at {terms}"
    term = binding or (failed.binding[0] if failed is not None and failed.binding else None)
    if n == 0 and failed is not None and term is not None and term != "error_rate":
        got = next((r.value for r in failed.readings if r.term == term), None)
        if got is not None:
            text += f": one user alone gets {KINDS[term].label} {amount(got, KINDS[term].unit)}"
    if binding:
        text += f" (binding: {KINDS[binding].label})"
    elif lower_bound_why:
        text += f" ({lower_bound_why})"
    return text + "." + "".join(f" {note[0].upper()}{note[1:]}." for note in notes or [])


def decide(
    slo: Slo, settings: SearchSettings, outcomes: list[ProbeOutcome], bench: BenchResult
) -> CapacityAnswer:
    """The answer the probes support (also for a search that was stopped before it settled)."""
    b = bounds(outcomes)
    judged = [o for o in outcomes if o.verdict != "stopped"]
    complete = len(judged) == len(outcomes)
    runs = [o for o in judged if o.concurrency == b.users] if b.users else []
    fail = next((o for o in judged if o.verdict == "fail" and o.concurrency == b.first_fail), None)
    why = None
    if not complete:
        why = "the search was stopped before it settled"
    elif fail is None:
        why = f"every probe passed up to --max-concurrency {settings.max_concurrency}"
    elif fail.client_bound and fail.client_could_flip is not False:
        # Only a lag that could have turned the server's pass into this fail makes the answer a
        # lower bound: a miss far larger than the client's worst lag is the server's.
        why = (
            f"the client set the pace at {users(fail.concurrency)}, so that failure may be "
            f"the client's"
        )
    binding = _worst(fail) if fail is not None and why is None else None
    closest = None
    if fail is None and runs:
        margins = [
            (r.margin, r.term)
            for r in runs[0].readings
            if r.margin is not None and r.term != "error_rate"
        ]
        closest = min(margins, key=lambda pair: pair[0])[1] if margins else None
    confirmed = not b.users or len(runs) >= 1 + settings.reruns
    unprobed = unprobed_below(outcomes, b.users) if complete else []
    supporting = [o for o in judged if o.verdict == "pass" and o.concurrency <= b.users]
    notes = few_requests(slo, supporting)
    said = list(notes)
    if not confirmed and complete:
        said.append(
            f"unconfirmed: {users(b.users)} rests on {len(runs)} run(s), not "
            f"{1 + settings.reruns}, after more than {settings.max_refuted} boundary re-runs failed"
        )
    if unprobed:
        said.append(f"levels not probed below it: {levels(unprobed)}")
    aggs = [o.aggregate_tok_s for o in runs if o.aggregate_tok_s is not None]
    agg = statistics.median(aggs) if aggs else None
    gpus = _gpu_count(bench)
    return CapacityAnswer(
        users=b.users,
        lower_bound=why is not None,
        lower_bound_why=why,
        complete=complete,
        last_pass=runs[0].cell if runs else None,
        first_fail=fail.cell if fail else None,
        first_fail_concurrency=b.first_fail,
        boundary_cells=[o.cell for o in runs],
        aggregate_tok_s=agg,
        gpu_count=gpus,
        aggregate_tok_s_per_gpu=agg / gpus if agg is not None and gpus else None,
        binding=binding,
        closest=closest,
        unstable=any(o.purpose == "rerun" and o.verdict == "fail" for o in outcomes),
        confirmed=confirmed,
        unprobed=unprobed,
        few_requests=notes,
        spread=_spread(slo, runs),
        sentence=sentence(slo, b.users, binding, why, fail, said),
    )


def users_point(
    slo: Slo, answer: CapacityAnswer, bench: BenchResult, extra: dict
) -> PerfPoint | None:
    """The answer as a ``users_at_slo`` perf point: the boundary cell's numbers at concurrency
    ``users``, with the SLO it holds for; None when no level met the SLO. ``extra`` holds what
    the recipe states (quant), as for a bench perf point."""
    if answer.last_pass is None:
        return None
    cell = bench.cells[answer.last_pass]
    point = perf_point(cell, bench.conditions, extra)
    p = bench.conditions.profile
    bound = "at least " if answer.lower_bound else ""
    notes = (
        f"rigbook capacity, profile {p.name} v{p.version}, SLO {slo.text}: {bound}{answer.users} "
        f"users; decode_tok_s is their aggregate (median of {len(answer.boundary_cells)} runs)"
        + "".join(f"; {note}" for note in answer.few_requests)
        + ("" if answer.confirmed else "; unconfirmed: the boundary rests on fewer runs than asked")
    )
    return point.model_copy(
        update={
            "decode_tok_s": answer.aggregate_tok_s,
            "notes": notes,
            "users_at_slo": answer.users,
            "slo_profile": f"{p.name} v{p.version}",
            "slo": slo.text,
            "users_at_slo_lower_bound": answer.lower_bound,
            "slo_binding": answer.binding,
        }
    )
