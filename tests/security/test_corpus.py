"""Every recipe of the unsafe corpus ends in a named refusal: E_UNSAFE or E_RECIPE_INVALID, never
E_INTERNAL.

Each corpus file is a recipe a stranger could publish, with ``_expect``: the code
it must end in and a word the refusal must say (the variable, the option, the
rule). The library path (load, plan, up's safety gate) and the CLI (`up --yes
--json`, `check --json`) are both run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.errors import RigbookError
from rigbook.launch import check as check_recipe
from rigbook.launch.planner import build_plan
from rigbook.launch.rules.table import OPTION_ALLOW
from rigbook.launch.run import refuse_unsafe
from rigbook.launch.safety import check_allow_names
from rigbook.recipe import load_recipe_file
from rigbook.rig.model import load_rig
from tests.launch.helpers import RIG_2X
from tests.security.conftest import corpus_names, corpus_recipe

NAMES = corpus_names()


def test_the_corpus_is_large_and_spans_every_engine_kind():
    kinds = {
        json.loads(Path(p).read_text())["rigbook"]["launch"]["kind"]
        for p in (f"tests/security/corpus/{n}" for n in NAMES)
        if json.loads(Path(p).read_text())["rigbook"]["launch"]
    }
    # The earlier 96 cases and at least 150 built from the option tables and issue 33.
    assert len(NAMES) >= 246
    assert len([n for n in NAMES if n.startswith(("table-", "issue-"))]) >= 150
    assert kinds == {
        "docker",
        "vllm",
        "sglang",
        "script_repo",
        "llama_cpp",
        "llama_server",
        "external",
    }


def _refusal(path, sandbox) -> RigbookError:
    try:
        recipe = load_recipe_file(str(path))
        plan = build_plan(recipe, rig=load_rig(RIG_2X), models_dir=sandbox / "models")
        refuse_unsafe(plan)
    except RigbookError as exc:
        return exc
    pytest.fail(f"{path.name} was not refused")


@pytest.mark.parametrize("name", NAMES)
def test_each_unsafe_recipe_is_refused_by_name(name, sandbox):
    path, expect = corpus_recipe(name, sandbox)
    error = _refusal(path, sandbox)
    said = " ".join([error.message, error.remedy or "", *error.details])
    assert error.code == expect["code"], said
    assert expect["says"] in said, said


@pytest.mark.parametrize("name", NAMES)
def test_up_json_prints_one_document_with_the_refusal(name, sandbox):
    path, expect = corpus_recipe(name, sandbox)
    done = CliRunner().invoke(
        app,
        [
            "up",
            str(path),
            "--yes",
            "--json",
            "--rig",
            str(RIG_2X),
            "--models-dir",
            str(sandbox / "models"),
        ],
        env={"PATH": "/nonexistent"},
    )
    document = json.loads(done.stdout)
    assert done.exit_code == 2 and document["error"]["code"] == expect["code"], done.stdout


@pytest.mark.parametrize("name", NAMES)
def test_check_reports_what_plan_refuses(name, sandbox):
    """`check` and `plan` share the screen: a recipe plan refuses as unsafe is not ok in check."""
    path, expect = corpus_recipe(name, sandbox)
    try:
        recipe = load_recipe_file(str(path))
    except RigbookError as exc:
        assert exc.code == expect["code"] == "E_RECIPE_INVALID"
        return
    error = _refusal(path, sandbox)
    report = check_recipe(recipe, load_rig(RIG_2X), models_dir=sandbox / "models")
    assert not report.ok
    if error.code == "E_UNSAFE":
        assert "E_UNSAFE" in report.codes, report.codes


ALLOW_RE = re.compile(r"--allow(-option)? (\S+)")


@pytest.mark.parametrize("name", NAMES)
def test_every_allow_name_a_refusal_prints_is_one_allow_accepts(name, sandbox):
    """Each `--allow NAME` / `--allow-option OPT` in a refusal's words is accepted by `up`, and
    allowing every one leaves only what no --allow lets through."""
    path, _expect = corpus_recipe(name, sandbox)
    error = _refusal(path, sandbox)
    said = " ".join([error.message, error.remedy or "", *error.details])
    named = [
        (OPTION_ALLOW if option else "") + value.rstrip(".,;)")
        for option, value in ALLOW_RE.findall(said)
    ]
    assert check_allow_names(named) == named
    if not named:
        return
    recipe = load_recipe_file(str(path))
    try:
        plan = build_plan(recipe, rig=load_rig(RIG_2X), models_dir=sandbox / "models", allow=named)
        refuse_unsafe(plan)
    except RigbookError as exc:
        left = " ".join([exc.message, exc.remedy or "", *exc.details])
        assert not (set(ALLOW_RE.findall(left)) - set(ALLOW_RE.findall(said))), left
