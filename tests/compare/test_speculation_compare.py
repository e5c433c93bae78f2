"""Compare names the drafter's acceptance: a claim with a speculator against a measurement."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbook.bench.result import BenchResult, Speculation, save_result
from rigbook.cli.app import app
from rigbook.compare import compare_refs
from rigbook.compare.build import pair_points
from rigbook.comparison import ComparedConditions, ComparedPoint, PointPair, Source
from rigbook.recipe import dump_recipe
from rigbook.recipe.resolve import resolve_recipe
from tests.compare.bench_results import make_result

runner = CliRunner()
H200_RECIPE = "smollm2-135m-instruct-q4-1-on-1x-h200-llama-cpp-cuda"
UNSEPARATED = "the comparison cannot separate rig speed from the drafter's acceptance"


def claim_file(tmp_path: Path, rates: dict[int, float], length: float | None) -> Path:
    """The catalog's H200 recipe as a speculative claim: llama-server's draft-simple drafter,
    perf points at ``rates`` that state ``length`` as their mean acceptance length (or none)."""
    record = dump_recipe(resolve_recipe(H200_RECIPE))
    record["slug"] = "smollm2-speculative-claim"
    record["rigbook"]["speculative"] = {"method": "draft-simple", "draft_length": 3}
    conditions = {} if length is None else {"speculative_acceptance_length": length}
    record["perf_points"] = [
        {"concurrency": c, "decode_tok_s": r, "claimed_by": "submitter", "conditions": conditions}
        for c, r in rates.items()
    ]
    path = tmp_path / "claim.json"
    path.write_text(json.dumps(record))
    return path


def measured_file(tmp_path: Path, rates: dict[int, float], length: float) -> Path:
    """A bench result whose cells counted drafts: ``length`` tokens per step, 300 drafts each."""
    result = make_result(energy=None, rates=rates)
    drafts, accepted = 300.0, 300.0 * (length - 1)
    spec = Speculation(
        engine="llama.cpp",
        drafts=drafts,
        draft_tokens=3 * drafts,
        accepted_tokens=accepted,
        acceptance_rate=accepted / (3 * drafts),
        mean_acceptance_length=length,
    )
    cells = [c.model_copy(update={"speculation": spec}) for c in result.cells]
    doc = BenchResult.model_validate(
        result.model_dump() | {"cells": [c.model_dump() for c in cells], "content_hash": None}
    ).with_hash()
    return save_result(doc, tmp_path / "measured.json")


def throughput(pair) -> list:
    return next(v for v in pair.verdicts if v.aspect == "throughput").reasons


def test_a_claim_without_acceptance_cannot_be_separated_from_the_drafter(tmp_path):
    """The measurement counted 2.5 tokens per step; the claim says nothing: the verdict says the
    rate gap may be the rig or the drafter, and cannot tell which."""
    claim = claim_file(tmp_path, {1: 600.0, 4: 1800.0}, None)
    measured = measured_file(tmp_path, {1: 520.0, 4: 1480.0}, 2.5)
    pair = compare_refs([str(claim), str(measured)]).pairs[0]
    (reason,) = [r for r in throughput(pair) if r.condition == "speculative_acceptance_length"]
    assert reason.severity == "caveat" and (reason.a, reason.b) == (None, "2.50")
    assert reason.message == (
        f"mean acceptance length unknown on A (B: 2.50 tokens per step): {UNSEPARATED}"
    )
    assert all(p.acceptance is not None for p in pair.points)
    assert pair.points[0].acceptance.b_mean_acceptance_length == 2.5
    out = runner.invoke(app, ["compare", str(claim), str(measured)], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    assert f"! mean acceptance length unknown on A (B: 2.50 tokens per step): {UNSEPARATED}" in (
        out.output
    )


def test_known_acceptance_on_both_sides_splits_the_rate_gap(tmp_path):
    """Claimed 720 tok/s at 3.0 tokens per step, measured 400 at 2.0: acceptance alone makes the
    claim 150 % of the measurement, so its steps ran at 180 / 150 = 120 % of the measured rate, and
    acceptance is ln 1.5 / ln 1.8 = 69 % of the gap."""
    claim = claim_file(tmp_path, {1: 720.0}, 3.0)
    measured = measured_file(tmp_path, {1: 400.0}, 2.0)
    pair = compare_refs([str(claim), str(measured)]).pairs[0]
    (point,) = pair.points
    gap = point.acceptance
    assert gap is not None and point.decode_ratio_pct == pytest.approx(180.0)
    assert gap.acceptance_ratio_pct == pytest.approx(150.0)
    assert gap.step_rate_ratio_pct == pytest.approx(120.0)
    assert gap.acceptance_share_pct == pytest.approx(100 * math.log(1.5) / math.log(1.8))
    (reason,) = [r for r in throughput(pair) if r.condition == "speculative_acceptance_length"]
    expected = (
        "mean acceptance length differs: 3.00 vs 2.00 tokens per step; at one step rate A would "
        "make 150.0% of B's tok/s: acceptance accounts for 69% of the gap (log scale), A's target "
        "steps run at 120.0% of B's rate"
    )
    assert (reason.severity, reason.message) == ("caveat", expected)
    md = runner.invoke(app, ["compare", str(claim), str(measured), "--format", "md"])
    assert md.exit_code == 0 and f"- ! {expected}" in md.output
    doc = json.loads(runner.invoke(app, ["compare", str(claim), str(measured), "--json"]).output)
    assert doc["pairs"][0]["points"][0]["acceptance"]["step_rate_ratio_pct"] == pytest.approx(120)


def point(
    method: str | None, length: float | None, rate: float = 100.0, gpus: int = 1
) -> ComparedPoint:
    return ComparedPoint(
        concurrency=1,
        decode_tok_s=rate,
        claimed_by="measured",
        conditions=ComparedConditions(
            speculative_method=method, speculative_acceptance_length=length, gpu_count=gpus
        ),
    )


def pair(a: ComparedPoint, b: ComparedPoint) -> PointPair:
    source = Source(ref="x", kind="recipe", name="x", model="m", points=[])
    return pair_points(source, a, source, b)


def reasons(p: PointPair, aspect: str = "throughput") -> list:
    found = next(v for v in p.verdicts if v.aspect == aspect).reasons
    return [r for r in found if r.condition == "speculative_acceptance_length"]


def test_no_speculator_on_either_side_says_nothing_of_acceptance():
    p = pair(point("none", None), point(None, None))
    assert p.acceptance is None and not reasons(p)


def test_acceptance_within_five_percent_is_alike_and_named_as_the_same():
    p = pair(point("mtp", 2.50, 150.0), point("mtp", 2.60, 100.0))
    assert not reasons(p) and "speculative_acceptance_length" in p.same
    p = pair(point("mtp", 2.50, 150.0), point("mtp", 2.70, 100.0))
    assert reasons(p) and "speculative_acceptance_length" not in p.same


def test_a_side_without_a_speculator_makes_one_token_per_step():
    """Speculation against none: all of a 2.4x acceptance ratio, against a 1.2x rate, means the
    drafter's steps ran at half the plain ones' rate (drafting costs)."""
    p = pair(point("ngram-simple", 2.4, 120.0), point("none", None, 100.0))
    assert p.acceptance is not None and p.acceptance.b_mean_acceptance_length == 1.0
    assert p.acceptance.step_rate_ratio_pct == pytest.approx(50.0)
    (r,) = reasons(p)
    assert "acceptance more than accounts for the gap, A's target steps run at 50.0%" in r.message


def test_a_rate_gap_against_acceptance_says_so():
    p = pair(point("mtp", 3.0, 90.0), point("mtp", 2.0, 100.0))
    (r,) = reasons(p)
    assert "but the gap runs the other way: A's target steps run at 60.0% of B's rate" in r.message


def test_differing_acceptance_is_no_scaling_figure():
    """A scaling ratio (here across GPU count) holds all but the factor: acceptance that differs
    mixes into it."""
    p = pair(point("mtp", 3.0, 300.0, gpus=2), point("mtp", 2.0, 100.0, gpus=1))
    (r,) = reasons(p, "scaling")
    assert r.severity == "not_comparable"
    assert next(v for v in p.verdicts if v.aspect == "scaling").verdict == "not comparable"
    unknown = pair(point("mtp", None, 300.0, gpus=2), point("mtp", None, 100.0, gpus=1))
    (r,) = reasons(unknown, "scaling")
    assert r.severity == "caveat" and r.message.endswith(UNSEPARATED)
    assert "unknown on both sides" in r.message
