"""`rigbook reproduce` against the synthetic server, whose per-request rate is known: a claim 5 % above
the truth is a real difference, a claim inside the measured interval is not."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from rigbook.bench.repeats import counted
from rigbook.bench.result import load_result
from rigbook.compare.sources import source_from_result
from rigbook.recipe.resolve import resolve_recipe
from rigbook.reproduce import ReproduceRequest, reproduce
from rigbook.reproduce.claims import plan_claims
from rigbook.reproduce.verdict import verdict_rows
from tests.bench.helpers import synthetic_server

TRUTH = 20.0  # tok/s each stream gets from the synthetic server (--rate), with no fall-off


def truth_recipe(tmp_path: Path, url: str, claims: list[float]) -> Path:
    """A recipe served by the running synthetic server, claiming ``claims`` tok/s for one request."""
    recipe = {
        "slug": "synthetic-ground-truth",
        "title": "the synthetic server at a known rate",
        "config": {"launch": []},
        "models": [{"slug": "synthetic", "name": "synthetic"}],
        "hardware": [],
        "perf_points": [
            {
                "concurrency": 1,
                "context_len": 1,
                "decode_tok_s": claim,
                "claimed_by": "submitter",
                "conditions": {"rate_definition": "per_request_decode"},
            }
            for claim in claims
        ],
        "rigbook": {"launch": {"kind": "external", "url": url}},
    }
    path = tmp_path / "truth.json"
    path.write_text(json.dumps(recipe))
    return path


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("truth")
    # One token an event, 50 ms apart: room for a loaded machine's scheduling; eleven gaps a
    # reply are a rate.
    with synthetic_server(f"--rate {TRUTH:g} --falloff 0 --tokens-per-chunk 1") as url:
        recipe = truth_recipe(tmp, url, [TRUTH * 1.05])
        rep = reproduce(
            ReproduceRequest(
                recipe=str(recipe),
                out_dir=tmp / "out",
                profile="quick",
                concurrency=[1],
                max_tokens=12,
                requests=2,
                max_repeats=6,
                unattended=True,
            ),
            confirm=lambda plan: True,
            note=lambda line: None,
        )
    return rep


def test_the_run_measures_the_truth_with_an_interval(reproduced) -> None:
    rep = reproduced
    result = load_result(rep.result)
    [level] = result.intervals
    assert level.repeats >= 3
    iv = level.per_request_decode_tok_s_median
    if iv is None or iv.low is None:
        pytest.skip("a loaded machine descheduled the client in all but one repeat")
    # The interval is of the counted repeats' medians (how close they come to TRUTH is
    # `make bench-truth`'s figure, not a bound a loaded machine may break here).
    medians = [c.metrics.per_request_decode_tok_s.p50 for c in counted(result.cells)]
    assert iv.mean == pytest.approx(statistics.fmean(medians))
    assert iv.high is not None and iv.low <= iv.mean <= iv.high
    assert [c.repeat for c in result.cells] == list(range(level.repeats))


def test_a_claim_is_called_by_the_measured_interval(reproduced) -> None:
    """The claim, 5 % above the truth, is a real difference where the interval leaves it out."""
    rep = reproduced
    [row] = rep.rows
    if row.call == "no interval":
        pytest.skip("a loaded machine descheduled the client: no interval to judge")
    assert row.claim_tok_s == pytest.approx(TRUTH * 1.05)
    assert row.rate == "per_request_decode" and row.interval is not None
    inside = row.interval.contains(row.claim_tok_s)
    assert row.call == ("within spread" if inside else "real difference")
    assert row.ratio_pct is not None


def test_a_claim_inside_the_interval_is_not(reproduced, tmp_path: Path) -> None:
    rep = reproduced
    result = load_result(rep.result)
    iv = result.intervals[0].per_request_decode_tok_s_median
    if iv is None or iv.low is None or iv.high is None:
        pytest.skip("no interval on a loaded machine")
    inside, outside = (iv.low + iv.high) / 2, iv.high * 1.01
    recipe = truth_recipe(tmp_path, "http://127.0.0.1:1", [inside, outside])
    claims = plan_claims(
        resolve_recipe(str(recipe)), str(recipe), profile="quick", max_tokens=12
    ).claims
    rows, _ = verdict_rows(result, source_from_result(rep.result, result), claims)
    calls = {row.claim_tok_s: row.call for row in rows}
    assert calls == {inside: "within spread", outside: "real difference"}


def test_the_folder_holds_result_comparison_report_and_summary(reproduced) -> None:
    rep = reproduced
    folder = Path(rep.folder)
    names = {p.name for p in folder.iterdir()}
    assert {"result.json", "comparison.json", "reproduction.json", "report"} <= names
    summary = json.loads((folder / "reproduction.json").read_text())
    assert summary["kind"] == "rigbook.reproduction" and summary["rows"][0]["claim_tok_s"]
    assert "95 % confidence interval" in (folder / "report" / "report.md").read_text()
