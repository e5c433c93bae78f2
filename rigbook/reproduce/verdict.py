"""The verdict on each claim: measured against claimed, and whether the gap is larger than the spread.

A claim and a measured level line up as `rigbook compare` lines them up (same concurrency, same
context class, the measured figure restated in the claim's rate definition). The difference is
*real* when the claim lies outside the measured rate's 95 % confidence interval, and *within
spread* when it lies inside. Conditions that differ between the claim and this rig (GPU count,
power per card, card variant, engine …) are listed beside it, with what `compare` says they cost.
"""

from __future__ import annotations

from rigbook.bench.intervals import Interval
from rigbook.bench.result import BenchResult, LevelInterval
from rigbook.compare.build import compare_pair
from rigbook.compare.rules import RULES_BY_NAME
from rigbook.comparison import PairComparison, PointPair, Source
from rigbook.reproduction import Call, Verdict, VerdictRow

RATE_NAMES = {
    "per_request_decode": "each",
    "aggregate_with_ttft": "all",
    "aggregate_decode": "all, no TTFT",
}


def _interval_for(
    levels: list[LevelInterval], concurrency: int, definition: str | None
) -> Interval | None:
    level = next((lv for lv in levels if lv.concurrency == concurrency), None)
    if level is None:
        return None
    if definition == "per_request_decode":
        return level.per_request_decode_tok_s_median
    return level.aggregate_tok_s


def _row(pair: PointPair, levels: list[LevelInterval]) -> VerdictRow:
    measured, claim = pair.a.point, pair.b.point
    definition = measured.conditions.rate_definition
    iv = _interval_for(levels, pair.concurrency, definition)
    throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
    blocking = [r.message for r in throughput.reasons if r.severity == "not_comparable"]
    # A reproduction is measured and a claim is claimed: that difference is the point, not news.
    differing = [
        r for r in throughput.reasons if r.kind == "differs" and r.condition != "claimed_by"
    ]
    differs = [r.message for r in differing]
    if blocking:
        call: Call = "not comparable"
    elif iv is None or iv.low is None or claim.decode_tok_s is None:
        call = "no interval"
    else:
        call = "within spread" if iv.contains(claim.decode_tok_s) else "real difference"
    return VerdictRow(
        concurrency=pair.concurrency,
        rate=definition,
        claim_tok_s=claim.decode_tok_s,
        measured_tok_s=measured.decode_tok_s,
        interval=iv,
        ratio_pct=pair.decode_ratio_pct,
        call=call,
        differs=differs,
        differing=[
            RULES_BY_NAME[r.condition].label for r in differing if r.condition in RULES_BY_NAME
        ],
        not_comparable=blocking,
    )


def verdict_rows(
    result: BenchResult, measured: Source, claims: Source
) -> tuple[list[VerdictRow], PairComparison | None]:
    """A row per claim, in concurrency order, and the comparison they come from (None with no claim)."""
    if not claims.points:
        return [
            VerdictRow(
                concurrency=p.concurrency,
                rate=p.conditions.rate_definition,
                measured_tok_s=p.decode_tok_s,
                interval=_interval_for(
                    result.intervals, p.concurrency, p.conditions.rate_definition
                ),
                call="no claim",
            )
            for p in measured.points
        ], None
    pair = compare_pair(measured, claims)
    rows = [_row(p, result.intervals) for p in pair.points]
    lined = {(p.b.point.concurrency, p.b.point.decode_tok_s) for p in pair.points}
    rows += [
        VerdictRow(
            concurrency=c.concurrency,
            rate=c.conditions.rate_definition,
            claim_tok_s=c.decode_tok_s,
            call="not measured",
        )
        for c in claims.points
        if (c.concurrency, c.decode_tok_s) not in lined
    ]
    rows.sort(key=lambda r: r.concurrency)
    return rows, pair


def overall(rows: list[VerdictRow]) -> Verdict:
    """The recipe's claims in one word. *does not hold*: a claim lies above the measured interval
    (the rig is slower by more than its spread); *holds*: every claim was measured and none does
    (a claim below the interval is a rig faster than claimed, which the claim promises too);
    *inconclusive*: no claim, or some claim not measured, not comparable or without an interval."""
    claimed = [r for r in rows if r.call != "no claim"]
    below = [
        r
        for r in claimed
        if r.call == "real difference"
        and r.claim_tok_s is not None
        and r.interval is not None
        and r.interval.high is not None
        and r.claim_tok_s > r.interval.high
    ]
    if below:
        return "does not hold"
    if claimed and all(r.call in ("within spread", "real difference") for r in claimed):
        return "holds"
    return "inconclusive"


_WORDS = {2: "two", 3: "three", 4: "four", 8: "eight"}


def contrast(result: BenchResult) -> str | None:
    """The seeds' contrast in one line: one request alone against the most at once, or None without both."""
    points = {p.concurrency: p for p in result.perf_points if p.decode_tok_s and p.concurrency}
    if 1 not in points or len(points) < 2:
        return None
    top = max(points)
    many_words = _WORDS.get(top, str(top))
    one, many = points[1].decode_tok_s or 0.0, points[top].decode_tok_s or 0.0
    each = points[top].per_request_decode_tok_s_median
    each_text = f", {each:.1f} tok/s each" if each is not None else ""
    return (
        f"one request alone: {one:.1f} tok/s; {many_words} at once: {many:.1f} tok/s together "
        f"({many / one:.2f}x){each_text}: the engine serves more in total while each user's own rate falls"
        if each is not None and each < one
        else f"one request alone: {one:.1f} tok/s; {many_words} at once: {many:.1f} tok/s together ({many / one:.2f}x){each_text}"
    )
