"""The interval method (Student's t over repeated cells), checked against a known distribution."""

from __future__ import annotations

import random

import pytest

from rigbook.bench.intervals import interval, t_975, within


@pytest.mark.parametrize(
    ("df", "t"),
    [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042), (60, 2.000), (120, 1.980)],
)
def test_t_quantiles_match_the_table(df: int, t: float) -> None:
    assert t_975(df) == pytest.approx(t, abs=0.002)


def test_a_worked_interval() -> None:
    # mean 3, sample sd 1.5811, n 5: half-width 2.776 x 1.5811 / sqrt(5) = 1.963
    iv = interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert iv.mean == 3.0 and iv.low == pytest.approx(1.037, abs=0.001)
    assert iv.high == pytest.approx(4.963, abs=0.001)
    assert iv.half_width_pct == pytest.approx(65.4, abs=0.1)
    assert within(iv, 66) and not within(iv, 65)


def test_one_value_has_no_interval() -> None:
    iv = interval([100.0])
    assert iv.low is None and iv.half_width_pct is None and not within(iv, 50)
    assert not iv.contains(100.0)


@pytest.mark.parametrize("n", [3, 5, 10])
def test_covers_the_true_mean_95_percent_of_the_time(n: int) -> None:
    # Normal draws with a known mean: a 95 % interval must hold it in 95 % of samples.
    rng = random.Random(37 + n)
    trials = 4000
    covered = sum(
        interval([rng.gauss(100.0, 5.0) for _ in range(n)]).contains(100.0) for _ in range(trials)
    )
    assert 0.935 <= covered / trials <= 0.965


def test_a_normal_interval_would_cover_too_little_with_few_repeats() -> None:
    # Why t and not the normal quantile: with 3 repeats, mean ± 1.96 s/√n misses far more often.
    rng = random.Random(3)
    trials, hits = 4000, 0
    for _ in range(trials):
        values = [rng.gauss(100.0, 5.0) for _ in range(3)]
        iv = interval(values)
        assert iv.low is not None and iv.high is not None
        half = (iv.high - iv.low) / 2 * 1.96 / t_975(2)
        hits += abs(iv.mean - 100.0) <= half
    assert hits / trials < 0.9
