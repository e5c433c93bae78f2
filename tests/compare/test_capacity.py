"""`rigbook compare` of capacities: two line up only under the same SLO (canonical text), and never
with perf points at a fixed concurrency; otherwise it says it cannot compare them, and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbook.capacity.result import hash_as_written, load_capacity
from rigbook.capacity.slo import parse_slo
from rigbook.compare.build import _same_slo, compare_refs
from rigbook.compare.render_md import render_md
from rigbook.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VLLM = str(FIXTURES / "capacity" / "vllm-cpu" / "per-user-5-ttft-p90-5s" / "capacity.json")
LLAMA = str(FIXTURES / "capacity" / "llama-server" / "per-user-5-ttft-p90-5s" / "capacity.json")
NO_USER = str(FIXTURES / "capacity" / "vllm-cpu" / "at-1-tok-s" / "capacity.json")
BENCH = str(FIXTURES / "results" / "cpu-llama-server" / "result.json")


def test_two_capacities_under_the_same_slo_compare_as_users():
    comparison = compare_refs([VLLM, LLAMA])
    pair = comparison.pairs[0].points[0]
    assert pair.slo == "per_user_tok_s>=5,ttft_p90_ms<=5000,error_rate<=0"
    assert (pair.a.point.users_at_slo, pair.b.point.users_at_slo) == (15, 8)
    assert pair.users_ratio_pct == pytest.approx(187.5)
    throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
    assert throughput.figure_pct == pytest.approx(187.5)
    text = render_md(comparison)
    assert "A's users at the SLO is 187.5%" in text
    # The figure is the users ratio on every line that quotes it, never called decode tok/s.
    assert "decode tok/s is 187.5%" not in text


def _under_another_slo(tmp_path: Path, slo: str) -> str:
    """The llama-server capacity with its SLO (and its point's) rewritten, hash re-taken."""
    raw = json.loads(Path(LLAMA).read_text(encoding="utf-8"))
    parsed = parse_slo(slo)
    raw["slo"] = parsed.model_dump(mode="json")
    for point in raw["perf_points"]:
        point["slo"] = parsed.text
    raw["content_hash"] = hash_as_written(raw)
    out = tmp_path / "other-slo.json"
    out.write_text(json.dumps(raw), encoding="utf-8")
    assert load_capacity(out).slo.text == parsed.text
    return str(out)


def test_capacities_under_different_slos_are_not_compared(tmp_path):
    other = _under_another_slo(tmp_path, "per_user_tok_s>=10,ttft_p90_ms<=5000")
    with pytest.raises(InputError) as err:
        compare_refs([VLLM, other])
    e = err.value
    assert e.code == "E_NOT_COMPARABLE" and "only under the same SLO" in e.message
    assert "same --slo" in e.remedy
    assert any("SLO per_user_tok_s>=5,ttft_p90_ms<=5000,error_rate<=0" in d for d in e.details)
    assert any("SLO per_user_tok_s>=10,ttft_p90_ms<=5000,error_rate<=0" in d for d in e.details)


def test_a_capacity_and_fixed_concurrency_points_are_not_compared():
    with pytest.raises(InputError) as err:
        compare_refs([LLAMA, BENCH])
    assert err.value.code == "E_NOT_COMPARABLE"
    assert any("no capacity (perf points at fixed concurrency)" in d for d in err.value.details)


def test_a_capacity_with_no_user_has_nothing_to_compare():
    with pytest.raises(InputError) as err:
        compare_refs([VLLM, NO_USER])
    assert any(d.startswith("no users at per_user_tok_s>=1") for d in err.value.details)


@pytest.mark.parametrize(
    "a, b, same",
    [
        (
            "per_user_tok_s>=5,ttft_p90_ms<=5000,error_rate<=0",
            "ttft_p90_ms <= 5s, per_user_tok_s_p50>=5.0",
            True,
        ),
        ("per_user_tok_s>=5,error_rate<=0.007", "per_user_tok_s>=5,error_rate<=0.7%", True),
        ("per_user_tok_s>=5,ttft_p90_ms<=5000", "per_user_tok_s>=5,ttft_p99_ms<=5000", False),
        ("per_user_tok_s>=5", "per_user_tok_s>=5,error_rate<=1%", False),
        ("not an slo", "not an slo", True),
        ("not an slo", "per_user_tok_s>=5", False),
    ],
)
def test_slos_match_in_canonical_form(a, b, same):
    assert _same_slo(a, b) is same
