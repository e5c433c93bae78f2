"""Derived figures exist only where valid; the tables carry their sources."""

from __future__ import annotations

import pytest

from rigbook.compare.derived import derive
from rigbook.compare.hardware import bandwidth_gb_s, card_table
from rigbook.compare.weights import model_facts, quant_format, quant_table
from rigbook.recipe.schema import PerfConditions, PerfPoint

POINT_FIELDS = {"concurrency", "context_len", "decode_tok_s"}


def smol_point(**changes) -> PerfPoint:
    """SmolLM2-135M Q4_1 on one H200; ``changes`` may name point fields or conditions."""
    cond = dict(
        gpu_count=1,
        card="NVIDIA H200",
        power_limit_w_per_gpu=700,
        quant="Q4_1",
        kv_cache_dtype="f16",
        speculative_method="none",
    ) | {k: v for k, v in changes.items() if k not in POINT_FIELDS}
    fields = dict(concurrency=1, context_len=None, decode_tok_s=569.0) | {
        k: v for k, v in changes.items() if k in POINT_FIELDS
    }
    return PerfPoint(**fields, conditions=PerfConditions(**cond))


def test_per_gpu_and_no_efficiency_from_a_power_limit():
    d = derive(smol_point(gpu_count=2), "SmolLM2-135M-Instruct")
    assert d.decode_tok_s_per_gpu == pytest.approx(284.5)
    assert d.tok_s_per_w is None and "cap, not a draw" in d.tok_s_per_w_unavailable


def test_efficiency_from_measured_energy():
    d = derive(smol_point(energy_j_per_token=0.5), "SmolLM2-135M-Instruct")
    assert d.tok_s_per_w == pytest.approx(2.0)


def test_bandwidth_ceiling_for_a_known_model():
    roof = derive(smol_point(), "smollm2-135m-instruct").roofline
    # 4.8 TB/s over 135M params x 0.625 B (Q4_1: 20 bytes per 32 weights)
    assert roof.ceiling_tok_s == pytest.approx(4800e9 / (135e6 * 0.625))
    assert roof.pct_of_ceiling == pytest.approx(100 * 569.0 / roof.ceiling_tok_s)
    with_kv = derive(
        smol_point(concurrency=4, context_len=1000, decode_tok_s=1500.0), "SmolLM2-135M-Instruct"
    ).roofline
    kv = 11520 * 2 * 1000
    assert with_kv.kv_bytes_per_token_read == kv
    assert with_kv.ceiling_tok_s == pytest.approx(4 * 4800e9 / (135e6 * 0.625 + 4 * kv))


@pytest.mark.parametrize(
    "model,changes,why",
    [
        ("glm-5-3-flash", {}, "active parameters"),
        ("SmolLM2-135M-Instruct", {"quant": "nvfp4-csf-mxfp8-attn-qad"}, "bytes per parameter"),
        ("SmolLM2-135M-Instruct", {"speculative_method": "mtp"}, "speculative decoding"),
        ("SmolLM2-135M-Instruct", {"card": "Mystery GPU 9000"}, "not in the bandwidth table"),
        (
            "SmolLM2-135M-Instruct",
            {"gpu_count": 0, "card": "CPU (AMD EPYC)"},
            "no GPU (ran on the CPU)",
        ),
        ("SmolLM2-135M-Instruct", {"gpu_count": None, "card": None}, "no GPU card"),
    ],
)
def test_no_ceiling_where_it_bounds_nothing(model, changes, why):
    d = derive(smol_point(**changes), model)
    assert d.roofline is None and why in d.roofline_unavailable


def test_card_table_lookup_and_sources():
    assert bandwidth_gb_s("RTX PRO 6000 Blackwell")[0] == 1792  # both variants agree
    assert bandwidth_gb_s("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition")[0] == 1792
    assert bandwidth_gb_s("NVIDIA GeForce RTX 4090")[0] == 1008
    assert bandwidth_gb_s("NVIDIA A100 SXM")[0] is None  # 40 GB and 80 GB SXM differ
    assert bandwidth_gb_s("NVIDIA A100-SXM4-80GB")[0] == 2039
    assert bandwidth_gb_s("NVIDIA A100-PCIE-40GB")[0] == 1555
    envelopes = {c.id: c.power_envelope_w for c in card_table()}
    assert (
        envelopes["rtx-pro-6000-blackwell-maxq"] == 300
        and envelopes["rtx-pro-6000-blackwell-workstation"] == 600
    )
    assert all(c.source.startswith("https://www.nvidia.com/") for c in card_table())


def test_model_and_quant_tables():
    assert model_facts("HuggingFaceTB/SmolLM2-135M-Instruct").active_params == 135_000_000
    assert model_facts("GLM-5.3-Flash").active_params is None
    assert quant_format("Q4_1").bytes_per_param == 0.625
    assert quant_format("nvfp4").bytes_per_param == 0.5625
    assert quant_format("bf16").bytes_per_param == 2 and quant_format("fp8").bytes_per_param == 1
    assert all(q.source for q in quant_table())


def test_single_request_share_of_the_ceiling_is_stated_in_md_and_json():
    """An F16 8B-class model on one H200 at concurrency 1: 4.8 TB/s over the weights a step reads
    (7,180,914,688 x 2 B = 14.36 GB) is a ceiling of about 334 tok/s; 250 tok/s is 74.8 % of it."""
    from rigbook.compare.build import compare_sources
    from rigbook.compare.render_md import render_md
    from rigbook.comparison import ComparedConditions, ComparedPoint, Source

    def source(name: str, rate: float) -> Source:
        cond = ComparedConditions(
            gpu_count=1, card="NVIDIA H200", quant="F16", speculative_method="none"
        )
        point = ComparedPoint(concurrency=1, decode_tok_s=rate, conditions=cond)
        return Source(
            ref=name, kind="recipe", name=name, model="llama-3.1-8b-shape-synthetic", points=[point]
        )

    comparison = compare_sources([source("a", 250.0), source("b", 200.0)])
    roof = comparison.pairs[0].points[0].a.derived.roofline
    assert roof is not None
    assert roof.ceiling_tok_s == pytest.approx(4800e9 / (7_180_914_688 * 2))
    assert round(roof.ceiling_tok_s) == 334
    assert roof.pct_of_ceiling == pytest.approx(74.8, abs=0.05)
    dumped = comparison.model_dump(mode="json")["pairs"][0]["points"][0]
    assert dumped["b"]["derived"]["roofline"]["pct_of_ceiling"] == pytest.approx(59.8, abs=0.05)
    assert "| 74.8% of ≤334 | 59.8% of ≤334 |" in render_md(comparison)
