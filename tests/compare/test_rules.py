"""Single rules: unknown is never equal, and each family costs what docs/compare.md says."""

from __future__ import annotations

from rigbook.compare.rules import RULES, judge
from rigbook.compare.verdict import aspect_verdicts
from rigbook.comparison import ComparedConditions, ComparedPoint
from rigbook.recipe.schema import Sampling

FULL = dict(
    sampling=Sampling(temperature=0, top_p=1),
    reply_tokens=400,
    thinking=False,
    token_count_source="server_continuous",
    bench_tool="rigbook",
    bench_tool_version="0.1.0",
    workload="prose",
    gpu_count=2,
    card="RTX PRO 6000 Blackwell Max-Q",
    power_limit_w_per_gpu=300,
    engine="vllm",
    engine_version="0.11.0",
    quant="fp8",
    kv_cache_dtype="fp8",
    speculative_method="none",
    bench_mode="burst",
    bench_profile="prose-400 v1",
    bench_profile_hash="sha256:0",
    rate_definition="aggregate_with_ttft",
)


def point(claimed_by: str = "measured", context_len: int | None = 1024, **changes) -> ComparedPoint:
    return ComparedPoint(
        concurrency=1,
        context_len=context_len,
        decode_tok_s=100.0,
        claimed_by=claimed_by,
        conditions=ComparedConditions(**(FULL | changes)),
    )


def by_aspect(a: ComparedPoint, b: ComparedPoint, a_tpw=None, b_tpw=None) -> dict:
    outcomes = judge(a, "m", b, "m")
    return {v.aspect: v for v in aspect_verdicts(outcomes, a_tpw, b_tpw, 100.0)}


def test_identical_conditions_are_comparable_for_throughput_and_need_energy_for_efficiency():
    v = by_aspect(point(), point())
    assert v["throughput"].verdict == "comparable" and not v["throughput"].reasons
    assert "scaling" not in v  # nothing varies: there is no scaling figure to judge
    assert v["power_efficiency"].verdict == "not comparable"
    v = by_aspect(point(), point(), a_tpw=2.0, b_tpw=1.0)
    assert (
        v["power_efficiency"].verdict == "comparable" and v["power_efficiency"].figure_pct == 200.0
    )


def test_a_null_condition_is_a_caveat_never_equal():
    v = by_aspect(point(), point(kv_cache_dtype=None))
    reason = next(r for r in v["throughput"].reasons if r.condition == "kv_cache_dtype")
    assert (reason.severity, reason.kind, reason.a, reason.b) == (
        "caveat",
        "unknown_one_side",
        "fp8",
        None,
    )
    both = by_aspect(point(thinking=None), point(thinking=None))
    assert (
        next(r for r in both["throughput"].reasons if r.condition == "thinking").kind
        == "unknown_both"
    )


def test_work_differences_are_not_comparable_for_every_aspect():
    for change in (
        dict(sampling=Sampling(temperature=0.7, top_p=1)),
        dict(reply_tokens=2000),
        dict(thinking=True),
        dict(workload="code"),
    ):
        v = by_aspect(point(), point(**change), 1.0, 1.0)
        assert {a.verdict for a in v.values()} == {"not comparable"}, change


def test_setup_differences_are_caveats_for_throughput_but_break_scaling():
    v = by_aspect(point(), point(gpu_count=4, quant="nvfp4"))
    assert v["throughput"].verdict == "comparable with caveats"
    assert v["scaling"].verdict == "not comparable"
    assert (
        next(r for r in v["scaling"].reasons if r.condition == "quant").severity == "not_comparable"
    )


def test_one_varied_factor_is_a_scaling_figure_two_are_not():
    one = by_aspect(point(), point(gpu_count=4))
    assert one["scaling"].verdict == "comparable with caveats"
    two = by_aspect(point(), point(gpu_count=4, power_limit_w_per_gpu=250))
    assert two["scaling"].verdict == "not comparable"


def test_no_gpu_against_a_gpu_is_no_scaling_step():
    v = by_aspect(point(gpu_count=1, card="NVIDIA H200"), point(gpu_count=0, card="CPU (AMD EPYC)"))
    gpu = {aspect: next(r for r in v[aspect].reasons if r.condition == "gpu_count") for aspect in v}
    assert gpu["scaling"].severity == "not_comparable"
    assert (
        gpu["scaling"].message
        == "GPU count differs: 1 vs 0 (no GPU against GPUs is no scaling step)"
    )
    assert (
        gpu["throughput"].severity == "caveat"
        and gpu["throughput"].message == "GPU count differs: 1 vs 0"
    )
    assert v["scaling"].verdict == "not comparable"
    # One GPU against two is still a step: the factor the ratio varies.
    assert (
        by_aspect(point(gpu_count=1), point(gpu_count=2))["scaling"].verdict
        == "comparable with caveats"
    )


def test_burst_against_sustained_is_a_caveat_stated_in_the_reasons():
    v = by_aspect(point(), point(bench_mode="sustained"))
    assert v["throughput"].verdict == "comparable with caveats"
    assert [r.message for r in v["throughput"].reasons] == [
        "bench mode differs: burst vs sustained"
    ]
    # A recipe that does not state its mode: unknown, like any other unstated condition.
    unknown = next(
        r
        for r in by_aspect(point(), point(bench_mode=None))["throughput"].reasons
        if r.condition == "bench_mode"
    )
    assert (unknown.kind, unknown.a) == ("unknown_one_side", "burst")


def test_bench_profile_is_judged_only_where_both_sides_state_one():
    v = by_aspect(point(), point(bench_profile="seed v1", bench_profile_hash="sha256:1"))
    assert [r.message for r in v["throughput"].reasons] == [
        "bench profile differs: prose-400 v1 vs seed v1"
    ]
    edited = by_aspect(point(), point(bench_profile_hash="sha256:1"))["throughput"]
    assert [r.message for r in edited.reasons] == ["bench profile content hash differs: 0 vs 1"]
    # A recipe states no profile: that is no gap, the profile is a rigbook result's own condition.
    recipe = by_aspect(point(), point(bench_profile=None, bench_profile_hash=None))["throughput"]
    assert recipe.verdict == "comparable"


def test_power_differences_become_caveats_for_efficiency_when_energy_is_measured():
    v = by_aspect(point(), point(power_limit_w_per_gpu=250), a_tpw=1.2, b_tpw=1.5)
    power = next(r for r in v["power_efficiency"].reasons if r.condition == "power_limit_w_per_gpu")
    assert power.severity == "caveat"
    assert v["power_efficiency"].verdict == "comparable with caveats"
    assert round(v["power_efficiency"].figure_pct, 1) == 80.0


def test_versions_are_judged_only_for_the_same_engine_or_tool():
    outcomes = {
        o.rule: o for o in judge(point(), "m", point(engine="sglang", engine_version="0.5"), "m")
    }
    assert outcomes["engine"].kind == "differs" and "engine_version" not in outcomes
    same = {o.rule: o for o in judge(point(), "m", point(engine_version="v0.11.0"), "m")}
    assert same["engine_version"].kind == "equal"  # a leading v is not a difference


def test_card_variant_and_claimed_vs_measured():
    outcomes = {
        o.rule: o
        for o in judge(
            point(),
            "m",
            point(card="NVIDIA RTX PRO 6000 Blackwell Workstation Edition", claimed_by="submitter"),
            "m",
        )
    }
    assert outcomes["card"].kind == "equal"
    assert (
        outcomes["card_variant"].kind,
        outcomes["card_variant"].a,
        outcomes["card_variant"].b,
    ) == ("differs", "Max-Q", "Workstation")
    assert outcomes["claimed_by"].kind == "differs"


def test_different_models_are_not_comparable():
    outcomes = judge(point(), "SmolLM2-135M-Instruct", point(), "glm-5-3-flash")
    v = {x.aspect: x for x in aspect_verdicts(outcomes, None, None, 100.0)}
    assert v["throughput"].verdict == "not comparable"


def test_every_condition_the_design_names_has_a_rule():
    names = {r.name for r in RULES}
    assert {
        "gpu_count",
        "card",
        "card_variant",
        "power_limit_w_per_gpu",
        "engine",
        "engine_version",
        "quant",
        "kv_cache_dtype",
        "speculative_method",
        "temperature",
        "top_p",
        "reply_tokens",
        "thinking",
        "token_count_source",
        "bench_tool",
        "bench_tool_version",
        "claimed_by",
        "context_len",
        "bench_mode",
        "bench_profile",
        "bench_profile_hash",
        "rate_definition",
    } <= names


def test_a_different_rate_definition_is_different_work_and_an_unstated_one_cannot_be_told():
    """A per-request decode rate is no aggregate with TTFT: not comparable. A claim that does not say
    which it holds is a caveat ("cannot tell") on every aspect."""
    v = by_aspect(point(), point(rate_definition="per_request_decode"))
    assert v["throughput"].verdict == "not comparable"
    assert any(
        r.condition == "rate_definition" and r.kind == "differs" for r in v["throughput"].reasons
    )
    v = by_aspect(point(), point(rate_definition=None))
    reason = next(r for r in v["throughput"].reasons if r.condition == "rate_definition")
    assert (reason.severity, reason.kind) == ("caveat", "unknown_one_side")


def test_a_per_request_claim_is_matched_with_the_per_request_median_of_a_rigbook_point():
    """A rigbook point holds the aggregate (TTFT included) and the per-request median: against a
    claim of a per-request decode rate, the median is compared, with the same definition on both
    sides; against an aggregate claim or one that does not say, the aggregate stays."""
    from rigbook.compare.build import pair_points
    from rigbook.comparison import Source

    ours = point().model_copy(
        update={"decode_tok_s": 232.7, "per_request_decode_tok_s_median": 238.0}
    )
    claim = point(rate_definition="per_request_decode", bench_tool="guide").model_copy(
        update={"decode_tok_s": 238.3}
    )
    a = Source(ref="a.json", kind="bench_result", name="a", model="m", points=[ours])
    b = Source(ref="b", kind="recipe", name="b", model="m", points=[claim])
    pair = pair_points(a, ours, b, claim)
    assert pair.a.point.decode_tok_s == 238.0
    assert pair.a.point.conditions.rate_definition == "per_request_decode"
    assert "per_request_decode_tok_s_median" in pair.a.point.notes
    assert abs(pair.decode_ratio_pct - 100.0 * 238.0 / 238.3) < 1e-9
    throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
    assert not any(r.condition == "rate_definition" for r in throughput.reasons)
    # The other order: B is ours.
    pair = pair_points(b, claim, a, ours)
    assert pair.b.point.decode_tok_s == 238.0
    # An unstated definition is still "cannot tell", on the aggregate.
    unstated = claim.model_copy(
        update={"conditions": claim.conditions.model_copy(update={"rate_definition": None})}
    )
    pair = pair_points(a, ours, b, unstated)
    assert pair.a.point.decode_tok_s == 232.7
    throughput = next(v for v in pair.verdicts if v.aspect == "throughput")
    reason = next(r for r in throughput.reasons if r.condition == "rate_definition")
    assert reason.kind == "unknown_one_side"
