"""Context length is a class matched with a stated tolerance, never an exact token count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.compare import compare_refs
from rigbook.compare.rules import context_label, same_context
from rigbook.errors import InputError
from tests.compare.test_seed_cases import SEED_TP4
from tests.conftest import SEED_RECORD

ROOT = Path(__file__).parents[2]
RUNS = ROOT / "tests" / "fixtures" / "results"
runner = CliRunner()


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (74, 75, True),
        (1, 76, True),
        (512, 1, True),
        (1024, 1200, True),
        (32768, 32000, True),
        (1024, 2048, False),
        (600, 400, False),
        (32768, 131072, False),
    ],
)
def test_context_classes(a: int, b: int, same: bool) -> None:
    assert same_context(a, b) is same and same_context(b, a) is same


def test_context_label_names_the_class() -> None:
    assert context_label(74) == "short (74)" and context_label(32768) == "~32k (32768)"


def test_two_runs_whose_median_prompts_differ_by_a_token_line_up() -> None:
    # 74/74/75 against 75/75/76 at 16/32/64 users: the old exact match lined up nothing.
    pair = compare_refs(
        [str(RUNS / "h200-f16" / "result.json"), str(RUNS / "h200-f16-fa" / "result.json")]
    ).pairs[0]
    assert [p.concurrency for p in pair.points] == [16, 32, 64]
    assert not pair.unmatched_b  # f16-fa ran these three levels only
    for point in pair.points:
        throughput = next(v for v in point.verdicts if v.aspect == "throughput")
        assert all(r.condition != "context_len" for r in throughput.reasons)


def test_a_fresh_result_lines_up_with_the_seeds_context_1(tmp_path: Path) -> None:
    from rigbook.bench.result import save_result
    from tests.compare.bench_results import make_result

    result = make_result(energy=None)
    for i, point in enumerate(result.perf_points):
        point.context_len = 74 + i  # the bench's median prompt length
    path = save_result(result.with_hash(), tmp_path / "r.json")
    pair = compare_refs([str(path), str(SEED_RECORD)]).pairs[0]
    assert [(p.concurrency, p.context_len) for p in pair.points] == [(1, 74), (4, 75)]


def test_shared_concurrency_but_other_context_says_so(tmp_path: Path) -> None:
    record = json.loads(SEED_RECORD.read_text())
    for p in record["perf_points"]:
        if p.get("concurrency"):
            p["context_len"] = 32768
    path = tmp_path / "long.json"
    path.write_text(json.dumps(record))
    with pytest.raises(InputError) as err:
        compare_refs([str(path), SEED_TP4])
    assert err.value.code == "E_NOT_COMPARABLE"
    assert (
        "share concurrency 1, 4, 8" in err.value.message and "none share" not in err.value.message
    )
    out = runner.invoke(app, ["compare", str(path), SEED_TP4])
    assert out.exit_code == 2 and "context length" in out.output
