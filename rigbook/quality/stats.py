"""The exact McNemar test for two paired sets of right/wrong answers.

Only the discordant pairs count: ``b`` questions A got right and B wrong, ``c`` the reverse.
Under the null hypothesis (A and B are equally good) each discordant pair is a fair coin, so
the two-sided p-value is the binomial tail ``2 * P(X <= min(b, c))`` for ``X ~ Bin(b + c, 1/2)``,
capped at 1. It is computed in exact integer arithmetic; no discordant pair gives p = 1.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))
