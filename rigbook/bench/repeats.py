"""Repeated cells: when a level has run often enough, and the intervals over its repeats.

With a CI target a level's cell is run again, a whole wave each time, until the 95 % confidence
interval (:mod:`rigbook.bench.intervals`) of both its aggregate tok/s and its median per-request
decode rate is within the target, or a cap ends it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from rigbook.bench.intervals import MIN_REPEATS, Interval, interval, within
from rigbook.bench.metrics import buffered_requests
from rigbook.bench.result import BenchResult, Cell, LevelInterval

DEFAULT_TARGET_PCT = 2.0
DEFAULT_MAX_REPEATS = 10


class RepeatPolicy(BaseModel):
    """How long a level is repeated: until the target half-width, at most so many repeats or seconds."""

    target_pct: float = Field(default=DEFAULT_TARGET_PCT, gt=0)
    max_repeats: int = Field(default=DEFAULT_MAX_REPEATS, ge=MIN_REPEATS)
    max_level_s: float | None = Field(
        default=None, gt=0, description="Seconds a level may take; checked after each repeat."
    )


def counted(cells: list[Cell]) -> list[Cell]:
    """The repeats an interval is taken over: valid, not client-bound, not buffered (their TTFT is
    the whole reply), with a rate."""
    return [
        c
        for c in cells
        if c.valid
        and not c.client_bound
        and not c.cut_short
        and c.metrics.aggregate_tok_s
        and not buffered_requests(c.requests)
    ]


def level_interval(
    concurrency: int, cells: list[Cell], policy: RepeatPolicy, stopped_by: str
) -> LevelInterval:
    """The intervals of one level over its counted repeats."""
    good = counted(cells)
    aggregate = interval([c.metrics.aggregate_tok_s or 0.0 for c in good]) if good else None
    medians = [c.metrics.per_request_decode_tok_s.p50 for c in good]
    per_request = (
        interval([m for m in medians if m is not None])
        if good and all(m is not None for m in medians)
        else None
    )
    met = (
        aggregate is not None
        and per_request is not None
        and within(aggregate, policy.target_pct)
        and within(per_request, policy.target_pct)
    )
    return LevelInterval(
        concurrency=concurrency,
        repeats=len(cells),
        aggregate_tok_s=aggregate,
        per_request_decode_tok_s_median=per_request,
        target_pct=policy.target_pct,
        met=met,
        stopped_by=stopped_by,  # type: ignore[arg-type]
    )


def stop_reason(
    cells: list[Cell], policy: RepeatPolicy, elapsed_s: float, signalled: bool
) -> str | None:
    """Why the level's repeats end now, or None to run another."""
    if signalled:
        return "signal"
    last = cells[-1]
    # Failed requests end the level (the run does not count); a client-bound repeat is only left
    # out of the interval, as a repeat the machine disturbed.
    if not last.valid:
        return "invalid"
    if (
        len(counted(cells)) >= MIN_REPEATS
        and level_interval(last.concurrency, cells, policy, "target").met
    ):
        return "target"
    if len(cells) >= policy.max_repeats:
        return "repeats"
    if policy.max_level_s is not None and elapsed_s >= policy.max_level_s:
        return "time"
    return None


def describe(iv: Interval | None) -> str:
    """'120.3 tok/s (95 % CI 118.1–122.5, ±1.8 %)', or why there is no interval."""
    if iv is None:
        return "no valid repeat"
    if iv.low is None or iv.high is None or iv.half_width_pct is None:
        return f"{iv.mean:.1f} tok/s (one repeat: no interval)"
    return f"{iv.mean:.1f} tok/s (95 % CI {iv.low:.1f}–{iv.high:.1f}, ±{iv.half_width_pct:.1f} %)"


_STOPPED = {
    "target": "target met",
    "repeats": "stopped at the repeat cap",
    "time": "stopped at the time cap",
    "signal": "stopped by a signal",
    "invalid": "stopped: a repeat had failed requests",
}


def interval_lines(result: BenchResult) -> list[str]:
    """One line per repeated level: both rates with their intervals, the repeats and why they ended."""
    return [
        f"concurrency {lv.concurrency}: aggregate {describe(lv.aggregate_tok_s)}; per-request median "
        f"{describe(lv.per_request_decode_tok_s_median)}; {lv.repeats} repeat{'' if lv.repeats == 1 else 's'}, "
        f"target ±{lv.target_pct:g} %, {_STOPPED[lv.stopped_by]}"
        for lv in result.intervals
    ]
