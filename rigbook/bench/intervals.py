"""The uncertainty of a measured rate: a 95 % confidence interval over repeated cells.

A cell is repeated as a whole wave (every request of the level sent again), so each repeat gives one
independent value of each rate: the aggregate tok/s and the median per-request decode rate. The
interval is Student's t over those values: mean ± t(0.975, n − 1) · s / √n, with s the sample
standard deviation. It needs two repeats at least; the repeats stop once the half-width is within
the target share of the mean for both rates, or when a cap (repeats or seconds) is reached, and the
interval is reported either way.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel, Field

# t(0.975, df) for df = 1..30 (two-sided 95 %), from the standard table.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_Z975 = 1.959964

MIN_REPEATS = 3  # two values give an interval, but t(0.975, 1) makes it almost always too wide


def t_975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("t needs at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    # Cornish-Fisher expansion around the normal quantile: within 0.001 of the table past df = 30.
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


class Interval(BaseModel):
    """A rate's mean over repeated cells and its 95 % confidence interval (Student's t)."""

    n: int = Field(description="Repeats the interval is taken over.")
    mean: float
    low: float | None = Field(default=None, description="None with fewer than two repeats.")
    high: float | None = None
    half_width_pct: float | None = Field(
        default=None, description="Half the interval's width as a share of the mean, in percent."
    )

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the interval (False when there is none)."""
        return self.low is not None and self.high is not None and self.low <= value <= self.high


def interval(values: Sequence[float]) -> Interval:
    """The 95 % confidence interval of the mean of ``values`` (one per repeat)."""
    if not values:
        raise ValueError("an interval needs at least one value")
    n, mean = len(values), statistics.fmean(values)
    if n < 2:
        return Interval(n=n, mean=mean)
    half = t_975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    pct = 100.0 * half / abs(mean) if mean else None
    return Interval(n=n, mean=mean, low=mean - half, high=mean + half, half_width_pct=pct)


def within(iv: Interval, target_pct: float) -> bool:
    """Whether the interval's half-width is at most ``target_pct`` percent of its mean."""
    return iv.half_width_pct is not None and iv.half_width_pct <= target_pct
