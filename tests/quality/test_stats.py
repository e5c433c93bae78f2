"""The exact McNemar p-value against binomial tables (two-sided, X ~ Bin(b + c, 1/2))."""

import pytest

from rigbook.quality.stats import mcnemar_exact_p


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 5, 0.0625),  # 2 * (1/2)^5
        (1, 9, 0.021484375),  # 2 * (1 + 10) / 1024
        (2, 8, 0.109375),  # 2 * (1 + 10 + 45) / 1024
        (3, 12, 0.03515625),  # 2 * (1 + 15 + 105 + 455) / 32768
        (0, 1, 1.0),  # one discordant pair says nothing
        (0, 10, 0.001953125),  # 2 / 1024
        (6, 14, 0.11531829833984375),  # 2 * sum_{i<=6} C(20, i) / 2^20 = 2 * 60460 / 1048576
    ],
)
def test_known_binomial_tails(b, c, p):
    assert mcnemar_exact_p(b, c) == pytest.approx(p, rel=1e-12)
    assert mcnemar_exact_p(c, b) == pytest.approx(p, rel=1e-12)  # symmetric in A and B


@pytest.mark.parametrize(("b", "c"), [(0, 0), (3, 3), (16, 16), (4, 5), (100, 101)])
def test_p_is_one_when_the_sides_are_even(b, c):
    # "p=1.0 vs TP4": as many questions only one side got right as only the other did (or one
    # more: the doubled tail passes 1 and is capped).
    assert mcnemar_exact_p(b, c) == 1.0


def test_large_counts_stay_exact_and_small():
    # 2 * P(X <= 100) for X ~ Bin(300, 1/2) is about 1.1e-8: no float underflow or rounding to 0.
    p = mcnemar_exact_p(100, 200)
    assert 1e-9 < p < 1e-7


def test_negative_counts_are_refused():
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 3)
