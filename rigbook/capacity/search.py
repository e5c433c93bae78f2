"""The search for the most users an SLO holds at: doubling, bisection, then a boundary re-run.

It runs against a :class:`Probe`, one bench cell at a given concurrency, and knows nothing
of HTTP. The rule it settles on is plain: the answer is the highest concurrency every run of
which met the SLO, below the lowest concurrency any run of which failed it. So the search never
probes above a level that failed (a server that starts failing requests is not pushed further),
and a re-run of the boundary that fails lowers the answer instead of being averaged away.

A probe is stopped as soon as a term is broken beyond doubt: the requests already seen fail it
whatever the rest turn out to be (:func:`rigbook.capacity.slo.broken_beyond_doubt`).

The curve need not be monotone: once doubling and bisection settle, the levels below the answer
that were never run are checked (up to ``checks`` of them, each the middle of the widest stretch
not yet run), so a dip below the answer lowers it instead of hiding under it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.result import Cell, RequestRecord
from rigbook.capacity.drain import Drain
from rigbook.capacity.slo import (
    Reading,
    Slo,
    broken_beyond_doubt,
    could_pass_with_lag,
    read_term,
    requests_needed,
)

Purpose = Literal["double", "bisect", "check", "rerun"]
Verdict = Literal["pass", "fail", "stopped"]

# Returns why the probe should stop now (a term broken beyond doubt), or None to go on.
Watch = Callable[[list[RequestRecord]], str | None]


class ProbePlan(BaseModel):
    """One probe the search asks for."""

    model_config = ConfigDict(frozen=True)

    concurrency: int = Field(ge=1)
    requests: int = Field(
        ge=1, description="Requests in the probe: each of the users sends rounds."
    )
    purpose: Purpose


class Probe(Protocol):
    """Measures one bench cell as planned, calling ``watch`` after each request and stopping
    the cell when it answers a reason; returns the cell (``cut_short`` when stopped)."""

    def __call__(self, plan: ProbePlan, watch: Watch) -> Awaitable[Cell]: ...


class SearchSettings(BaseModel):
    """How hard the search looks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_concurrency: int = Field(default=256, ge=1, description="Never probe above this.")
    rounds: int = Field(default=3, ge=1, description="Requests each user sends, one after another.")
    min_requests: int = Field(default=8, ge=1, description="Fewest requests in any probe.")
    reruns: int = Field(
        default=2, ge=0, description="Extra runs of the boundary (last passing) level."
    )
    max_refuted: int = Field(
        default=3, ge=0, description="Boundary re-runs allowed to fail before the search stops."
    )
    max_requests: int | None = Field(
        default=None,
        ge=1,
        description="Most requests a probe sends to meet a term's rule (requests_needed); a term "
        "that needs more passes on what it got and says which tail it could miss. None: no cap.",
    )
    checks: int = Field(
        default=8, ge=0, description="Most levels below the answer, never run, that are checked."
    )
    drain_s: float = Field(
        default=2.0,
        ge=0,
        description="Wait after a probe stopped early, when the server shows no in-flight counter.",
    )
    drain_timeout_s: float = Field(
        default=60.0,
        ge=0,
        description="Longest wait for the server's counters to show no request in flight.",
    )

    def requests_for(self, concurrency: int, slo: Slo | None = None) -> int:
        """Requests at ``concurrency``: ``rounds`` per user, at least ``min_requests``, and at
        least what every term of ``slo`` needs (:func:`requests_needed`, up to ``max_requests``)."""
        base = max(self.rounds * concurrency, self.min_requests)
        if slo is None:
            return base
        need = max(requests_needed(t) for t in slo.terms)
        if self.max_requests is not None:
            need = min(need, self.max_requests)
        return max(base, need)


class ProbeOutcome(BaseModel):
    """One probe as the search judged it. ``cell`` is the index of its cell in the bench part."""

    cell: int
    concurrency: int
    requests_planned: int
    purpose: Purpose
    verdict: Verdict
    readings: list[Reading]
    binding: list[str] = Field(default_factory=list, description="Terms that failed.")
    stopped_early: str | None = Field(
        default=None, description="Why the probe was stopped before its end."
    )
    client_bound: bool = False
    client_lag_ms: float | None = Field(
        default=None, description="The client's worst lag in the probe, when it was client-bound."
    )
    client_could_flip: bool | None = Field(
        default=None,
        description="Client-bound and failed: whether a lag of client_lag_ms in the server's "
        "favour would have made every failing term pass (None: not known, taken as yes).",
    )
    drain: Drain | None = Field(
        default=None, description="The wait for an idle server before this probe began."
    )
    requests_ok: int = 0
    requests_failed: int = 0
    aggregate_tok_s: float | None = None
    result_file: str | None = Field(
        default=None, description="The probe's own bench result, relative to the capacity result."
    )


class Bounds(BaseModel):
    """What the probes so far establish."""

    users: int = Field(description="Highest level all of whose runs passed, below first_fail.")
    first_fail: int | None = Field(description="Lowest level any run of which failed.")


def bounds(outcomes: list[ProbeOutcome]) -> Bounds:
    """The answer's rule applied to the outcomes so far."""
    failed = [o.concurrency for o in outcomes if o.verdict == "fail"]
    first_fail = min(failed) if failed else None
    judged = [o for o in outcomes if o.verdict != "stopped"]
    levels = {o.concurrency for o in judged if first_fail is None or o.concurrency < first_fail}
    held = [c for c in levels if all(o.verdict == "pass" for o in judged if o.concurrency == c)]
    return Bounds(users=max(held, default=0), first_fail=first_fail)


def client_lag_ms(cell: Cell) -> float | None:
    """The longest the client could have moved a stamp in ``cell``: the worst of its loop's
    stall, a merged read's window and a lane's late turnover; None when it measured none."""
    load = cell.client
    if load is None:
        return None
    figures = [
        load.stall_worst_bound_ms,
        load.loop_lag_worst_ms,
        load.merged_read_worst_ms,
        load.first_read_worst_ms,
        load.last_read_worst_ms,
        load.next_request_late_worst_ms,
    ]
    known = [f for f in figures if f is not None]
    return max(known) if known else None


def judge(slo: Slo, plan: ProbePlan, cell: Cell, broken: tuple[str, str] | None) -> ProbeOutcome:
    """Read every term on the probe's requests; ``broken`` is (term, why) when the probe was
    stopped for a term broken beyond doubt. A probe stopped by the user has no verdict."""
    readings = [read_term(t, cell.requests) for t in slo.terms]
    stopped_early = broken[1] if broken else None
    if broken:
        readings = [
            r.model_copy(update={"passed": False, "broken_early": True})
            if r.term == broken[0]
            else r
            for r in readings
        ]
    failing = [r.term for r in readings if not r.passed]
    if cell.cut_short and not stopped_early:
        verdict: Verdict = "stopped"
    else:
        verdict = "fail" if failing else "pass"
    # An SLO judges TTFT too: a probe is client-bound when the client could have moved any
    # figure (cell.client_bound speaks of the rates alone); could_flip then says if it mattered.
    bound = cell.client_bound or bool(cell.client and cell.client.marked)
    lag = client_lag_ms(cell) if bound else None
    could_flip = None
    if verdict == "fail" and lag is not None:
        by_name = {t.name: t for t in slo.terms}
        could_flip = all(could_pass_with_lag(by_name[t], cell.requests, lag) for t in failing)
    return ProbeOutcome(
        cell=cell.index,
        concurrency=plan.concurrency,
        requests_planned=plan.requests,
        purpose=plan.purpose,
        verdict=verdict,
        readings=readings,
        binding=failing if verdict == "fail" else [],
        stopped_early=stopped_early,
        client_bound=bound,
        client_lag_ms=lag,
        client_could_flip=could_flip,
        requests_ok=cell.metrics.requests_ok,
        requests_failed=cell.metrics.requests_failed,
        aggregate_tok_s=cell.metrics.aggregate_tok_s,
    )


def unprobed_below(outcomes: list[ProbeOutcome], users: int) -> list[int]:
    """Levels below ``users`` that no judged probe ran."""
    ran = {o.concurrency for o in outcomes if o.verdict != "stopped"}
    return [c for c in range(1, users) if c not in ran]


def widest_middle(levels: list[int]) -> int:
    """The middle of the longest stretch of consecutive ``levels`` (the lowest such stretch on a
    tie): the level furthest from any that was run."""
    stretches: list[list[int]] = []
    for c in sorted(levels):
        if stretches and stretches[-1][-1] == c - 1:
            stretches[-1].append(c)
        else:
            stretches.append([c])
    widest = max(stretches, key=len)  # max keeps the first, the lowest, of equal lengths
    return widest[(len(widest) - 1) // 2]


def next_plan(
    outcomes: list[ProbeOutcome], settings: SearchSettings, slo: Slo | None = None
) -> ProbePlan | None:
    """The next probe, or None when the answer is settled."""
    if any(o.verdict == "stopped" for o in outcomes):
        return None
    b = bounds(outcomes)

    def plan(c: int, purpose: Purpose) -> ProbePlan:
        return ProbePlan(concurrency=c, requests=settings.requests_for(c, slo), purpose=purpose)

    top = settings.max_concurrency
    if b.first_fail is None and b.users < top:
        return plan(1 if b.users == 0 else min(2 * b.users, top), "double")
    if b.first_fail is not None and b.first_fail - b.users > 1:
        return plan((b.users + b.first_fail) // 2, "bisect")
    if b.users == 0:
        return None
    unprobed = unprobed_below(outcomes, b.users)
    if unprobed and sum(o.purpose == "check" for o in outcomes) < settings.checks:
        return plan(widest_middle(unprobed), "check")
    refuted = sum(o.purpose == "rerun" and o.verdict == "fail" for o in outcomes)
    runs = sum(o.concurrency == b.users for o in outcomes)
    if runs < 1 + settings.reruns and refuted <= settings.max_refuted:
        return plan(b.users, "rerun")
    return None


def _watch(slo: Slo, plan: ProbePlan, broken: list[tuple[str, str]]) -> Watch:
    """A watch that remembers the first term it found broken in ``broken``."""

    def watch(records: list[RequestRecord]) -> str | None:
        if broken:
            return broken[0][1]
        for term in slo.terms:
            if broken_beyond_doubt(term, records, plan.requests):
                broken.append(
                    (
                        term.name,
                        f"{term.text()} broken beyond doubt after "
                        f"{len(records)} of {plan.requests} requests",
                    )
                )
                return broken[0][1]
        return None

    return watch


async def search(
    probe: Probe,
    slo: Slo,
    settings: SearchSettings,
    on_probe: Callable[[ProbeOutcome], None] | None = None,
) -> list[ProbeOutcome]:
    """Probe until the answer is settled or the user stops a probe; every outcome in order."""
    outcomes: list[ProbeOutcome] = []
    while (plan := next_plan(outcomes, settings, slo)) is not None:
        broken: list[tuple[str, str]] = []
        cell = await probe(plan, _watch(slo, plan, broken))
        outcome = judge(slo, plan, cell, broken[0] if broken else None)
        outcomes.append(outcome)
        if on_probe:
            on_probe(outcome)
    return outcomes
