"""Publishing a `rigbook capacity` result: what the hub checks before its users_at_slo point joins.

A capacity result (``kind: rigbook.capacity.result``) carries its probes as the cells of one
bench result (``bench``), every request included, and one ``users_at_slo`` perf point. The hub
admits it as it admits a bench result, with the same rules for the conditions, the rig, the
model, the engine and the rates (:func:`rigbook.hub.admission.result_problems`, run on the bench
part with the users_at_slo point as its only point), after checking the capacity result's own
``content_hash`` (which covers the bench part and the point).

And it re-runs the answer from the requests: each probe's cell is rebuilt with the bench's
code (:func:`rigbook.hub.evidence.check_journal`), each SLO term read again on the cell's
requests with capacity's own code, and the search's rule applied to those verdicts: the users,
the aggregate at that level and the point must come out as the result says. A point that
passes is ``consistent-with-journal``; one whose cells carry no requests is
``measured-unverified``; any disagreement refuses the result.
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel

from rigbook.capacity.result import CapacityResult, hash_matches
from rigbook.capacity.search import bounds
from rigbook.capacity.slo import canonical_slo, parse_slo, read_term
from rigbook.errors import InputError
from rigbook.hub.admission import result_problems
from rigbook.hub.evidence import REL_TOL, check_journal, rebuild_cell
from rigbook.recipe.schema import Recipe


class CapacityCheck(BaseModel):
    """Whether the requests back the users_at_slo point, and every disagreement found."""

    verified: bool
    problems: list[str]


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= max(REL_TOL * max(abs(a), abs(b)), 1e-12)


def check_capacity_journal(result: CapacityResult) -> CapacityCheck:
    """Rebuild the probes' cells and the answer from their requests; compare with the claims."""
    problems = check_journal(result.bench).problems
    cells = result.bench.cells
    try:
        slo = parse_slo(result.slo.text)
    except InputError as exc:
        return CapacityCheck(verified=False, problems=[f"slo.text: {exc.message}"])
    if slo.terms != result.slo.terms:
        problems.append(f"slo.terms: not the terms of its text {result.slo.text!r}")
    carried = bool(cells) and all(c.requests for c in cells)
    if not carried:
        return CapacityCheck(verified=False, problems=problems)
    rebuilt = {c.index: rebuild_cell(c) for c in cells}
    for i, probe in enumerate(result.probes):
        cell = next((c for c in cells if c.index == probe.cell), None)
        where = f"probes.{i}"
        if cell is None:
            problems.append(f"{where}.cell: no cell {probe.cell} in bench.cells")
            continue
        if cell.concurrency != probe.concurrency:
            problems.append(
                f"{where}.concurrency: {probe.concurrency}, but cell {cell.index} ran at "
                f"{cell.concurrency}"
            )
        for reading in probe.readings:
            term = slo.term(reading.term)
            if term is None:
                problems.append(f"{where}.readings: {reading.term} is not a term of the SLO")
                continue
            again = read_term(term, cell.requests)
            if not _close(reading.value, again.value):
                problems.append(
                    f"{where}.readings.{reading.term}: claims {reading.value!r}; its requests "
                    f"give {again.value!r}"
                )
            if reading.passed and not again.passed:
                problems.append(
                    f"{where}.readings.{reading.term}: claims a pass; its requests fail it"
                )
        failed = any(not r.passed for r in probe.readings)
        if probe.verdict == "pass" and failed:
            problems.append(f"{where}.verdict: pass, with a failing term")
        if probe.verdict == "fail" and not failed:
            problems.append(f"{where}.verdict: fail, with every term met")
    b = bounds(result.probes)
    answer = result.answer
    if answer.users != b.users:
        problems.append(
            f"answer.users: claims {answer.users}; its probes give {b.users} (the highest level "
            "every run of which met the SLO, below the lowest that failed)"
        )
    runs = [o for o in result.probes if o.verdict != "stopped" and o.concurrency == b.users]
    aggs = [rebuilt[o.cell].metrics.aggregate_tok_s for o in runs if o.cell in rebuilt]
    known = [a for a in aggs if a is not None]
    aggregate = statistics.median(known) if known and b.users else None
    for i, point in enumerate(result.perf_points):
        where = f"perf_points.{i}"
        if point.users_at_slo != b.users:
            problems.append(
                f"{where}.users_at_slo: claims {point.users_at_slo}; probes give {b.users}"
            )
        if point.concurrency != point.users_at_slo:
            problems.append(f"{where}.concurrency: must equal users_at_slo")
        if canonical_slo(point.slo or "") != slo.text:
            problems.append(f"{where}.slo: {point.slo!r} is not the result's SLO {slo.text!r}")
        if not _close(point.decode_tok_s, aggregate):
            problems.append(
                f"{where}.decode_tok_s: claims {point.decode_tok_s!r}; the median aggregate of "
                f"the runs at {b.users} users is {aggregate!r}"
            )
    return CapacityCheck(verified=not problems, problems=problems)


def capacity_problems(result: CapacityResult, recipe: Recipe, given: object = None) -> list[str]:
    """Every reason to refuse a capacity result for ``recipe``, one line each (empty: accept).
    ``given``: the JSON as posted, whose own content the hash is checked on (as `load_capacity`
    checks a file as written); without it, the hash is checked on ``result`` re-serialised."""
    problems = []
    hash_ok = (
        hash_matches(given)
        if given is not None
        else result.content_hash is not None
        and result.content_hash == result.with_hash().content_hash
    )
    if not hash_ok:
        problems.append(
            "content_hash: does not match the capacity result's content (edited after the run, "
            "or missing)"
        )
    if not result.perf_points:
        problems.append(
            "perf_points: no users_at_slo point (no level met the SLO): nothing to publish"
        )
        return problems
    if not result.answer.complete:
        problems.append("answer.complete: the search was stopped before it settled")
    # The bench part under the admission rules of a bench result, with the users point as its
    # point; its own hash is covered by the capacity result's, checked above.
    as_bench = result.bench.model_copy(update={"perf_points": result.perf_points}).with_hash()
    problems += [p for p in result_problems(as_bench, recipe) if not p.startswith("content_hash")]
    return problems
