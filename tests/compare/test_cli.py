"""`rigbook compare` on the command line: formats, several sources, bad input."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rigbook.cli.app import app
from tests.compare.test_seed_cases import GUIDE_2GPU, GUIDE_4GPU, SEED_TP2, SEED_TP4
from tests.conftest import SEED_RECORD

runner = CliRunner()


def test_three_sources_give_every_pair():
    out = runner.invoke(app, ["compare", SEED_TP2, SEED_TP4, GUIDE_2GPU, "--json"])
    assert out.exit_code == 0, out.output
    pairs = json.loads(out.output)["pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [
        (SEED_TP2, SEED_TP4),
        (SEED_TP2, GUIDE_2GPU),
        (SEED_TP4, GUIDE_2GPU),
    ]
    # The seed's points state context 1, the guide's none: they line up, with the unknown as a caveat.
    mixed = pairs[1]
    assert [p["concurrency"] for p in mixed["points"]] == [1, 4]
    assert mixed["unmatched_a"] == ["concurrency 8, context short (1)"]


def test_bad_format_and_too_few_sources():
    out = runner.invoke(app, ["compare", GUIDE_2GPU, GUIDE_4GPU, "--format", "html"])
    assert out.exit_code == 2 and "error[E_INPUT]" in out.output
    out = runner.invoke(app, ["compare", GUIDE_2GPU])
    assert out.exit_code == 2 and "at least two sources" in out.output
    out = runner.invoke(app, ["compare", GUIDE_2GPU, "no-such-recipe", "--json"])
    assert out.exit_code == 2 and json.loads(out.output)["error"]["code"] == "E_RECIPE_NOT_FOUND"


def test_nothing_lines_up(tmp_path):
    record = json.loads(SEED_RECORD.read_text())
    for p in record["perf_points"]:
        p["concurrency"] = 16 if p["concurrency"] else None
    path = tmp_path / "c16.json"
    path.write_text(json.dumps(record))
    out = runner.invoke(app, ["compare", str(path), SEED_TP4])
    assert out.exit_code == 2
    assert "error[E_NOT_COMPARABLE]" in out.output and "concurrency 16" in out.output


def test_docs_state_every_rule_and_table():
    from pathlib import Path

    from rigbook.compare.rules import RULES

    doc = (Path(__file__).parents[2] / "docs" / "compare.md").read_text()
    for rule in RULES:
        assert f"`{rule.name}`" in doc, rule.name
    for name in (
        "hardware.json",
        "models.json",
        "quants.json",
        "`energy`",
        "`factors`",
        "E_NOT_COMPARABLE",
        "geometric mean",
    ):
        assert name in doc


def test_a_file_that_is_neither_result_nor_recipe_says_so(tmp_path):
    from tests.compare.bench_results import write_result

    good = write_result(tmp_path / "good.json", energy=None)
    cut = tmp_path / "cut.json"
    cut.write_text(good.read_text()[:500])
    out = runner.invoke(app, ["compare", str(cut), str(good), "--json"])
    error = json.loads(out.output)["error"]
    assert (
        out.exit_code == 2
        and error["code"] == "E_RESULT_INVALID"
        and "neither a bench result nor a recipe" in error["message"]
    )
    broken_recipe = tmp_path / "recipe.json"
    broken_recipe.write_text(json.dumps({"slug": "x", "config": {"launch": 5}}))
    out = runner.invoke(app, ["compare", str(broken_recipe), str(good), "--json"])
    assert json.loads(out.output)["error"]["code"] == "E_RECIPE_INVALID"
