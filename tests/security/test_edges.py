"""The audit's edge cases: one port parser, known --allow names, recipes that crashed plan, check
= plan."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.errors import LaunchError, RigbookError
from rigbook.launch.planner import build_plan
from rigbook.recipe import load_recipe_file
from rigbook.rig.model import load_rig
from tests.launch.helpers import RIG_2X, write_recipe
from tests.security.conftest import CORPUS


def cli(*args: str) -> tuple[int, dict]:
    done = CliRunner().invoke(app, list(args), env={"PATH": "/nonexistent"})
    return done.exit_code, json.loads(done.stdout)


@pytest.mark.parametrize("port", ["0", "99999", "٨٠٨٠", "-1", "8080x", "²"])
@pytest.mark.parametrize(
    "command", [["plan"], ["up", "--dry-run"], ["check", "--rig", str(RIG_2X)]]
)
def test_every_command_reads_a_port_the_same_way(command, port, sandbox):
    recipe = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"
    code, document = cli(*command, recipe, "--port", port, "--json")
    assert (
        code == 2
        and document["error"]["code"] == "E_INPUT"
        and "1 to 65535" in document["error"]["message"]
    )


def test_up_port_zero_does_not_fall_back_to_the_recipes_port(sandbox, tmp_path):
    path = write_recipe(
        tmp_path, "served", {"kind": "vllm", "model": "org/model"}, serve={"port": 8123}
    )
    _code, document = cli("up", str(path), "--dry-run", "--port", "0", "--json")
    assert document["error"]["code"] == "E_INPUT"


@pytest.mark.parametrize("name", ["bogus", "env:LD_PRELOAD", "env:PATH", "env:1BAD", "env:"])
def test_allow_takes_only_known_names(name, sandbox):
    code, document = cli(
        "up", "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp", "--dry-run", "--allow", name, "--json"
    )
    assert (
        code == 2
        and document["error"]["code"] == "E_INPUT"
        and "env:NAME" in document["error"]["remedy"]
    )


def test_allowing_an_undocumented_variable_by_name_lets_it_through(sandbox):
    path = CORPUS / "env-vllm-undocumented.json"
    recipe = load_recipe_file(str(path))
    refused = build_plan(recipe, models_dir=sandbox / "models")
    allowed = build_plan(recipe, models_dir=sandbox / "models", allow=["env:FOO"])
    assert refused.blocking and not allowed.blocking
    assert allowed.command.env["FOO"] == "bar"


@pytest.mark.parametrize(
    "launch",
    [
        {"kind": "sglang", "model": "org/model", "args": ["--max-model-len"]},
        {"kind": "docker", "image": "example/engine:1", "env": {"PORT": "²"}},
        {"kind": "docker", "image": "example/engine:1", "env": {"PORT": "99999999999999999999"}},
    ],
)
def test_recipes_that_crashed_plan_now_plan(launch, sandbox, tmp_path):
    recipe = load_recipe_file(str(write_recipe(tmp_path, "crashed", launch, gpus=1)))
    plan = build_plan(recipe, rig=load_rig(RIG_2X), models_dir=sandbox / "models")
    assert plan.command is not None
    if launch["kind"] == "docker":
        assert "-p" in plan.command.argv and plan.command.argv[
            plan.command.argv.index("-p") + 1
        ].endswith(":8000")


def test_an_option_without_its_value_is_a_coded_refusal(sandbox, tmp_path):
    launch = {"kind": "vllm", "model": "org/model", "args": ["--gpu-memory-utilization"]}
    recipe = load_recipe_file(str(write_recipe(tmp_path, "crashed", launch, gpus=1)))
    with pytest.raises(LaunchError) as caught:
        build_plan(recipe, rig=load_rig(RIG_2X), models_dir=sandbox / "models")
    assert caught.value.code == "E_UNSAFE" and "needs a value" in caught.value.message


def test_a_symlinked_weights_folder_is_never_mounted(sandbox, tmp_path):
    # MODELS_DIR/org → / : the pinned folder would resolve to /name/REV on the host.
    (sandbox / "models" / "org").symlink_to("/")
    launch = {"kind": "docker", "image": "example/engine:1", "env": {"MODEL": "org/name"}}
    path = write_recipe(tmp_path, "linked", launch)
    data = json.loads(path.read_text())
    data["artifacts"] = [
        {
            "kind": "model_weights",
            "pointer_type": "hf_model",
            "pointer": "org/name",
            "pin": "0123456789abcdef0123456789abcdef01234567",
        }
    ]
    path.write_text(json.dumps(data))
    with pytest.raises(RigbookError) as caught:
        build_plan(load_recipe_file(str(path)), models_dir=sandbox / "models")
    assert caught.value.code == "E_UNSAFE" and "outside" in caught.value.message


def test_check_on_the_cli_reports_what_up_refuses(sandbox):
    code, report = cli(
        "check", str(CORPUS / "opt-llama-cpp-hos-abbrev.json"), "--rig", str(RIG_2X), "--json"
    )
    assert code == 2 and "E_UNSAFE" in [f["code"] for f in report["findings"]]


def test_a_script_plan_says_what_running_it_trusts(sandbox, tmp_path):
    launch = {
        "kind": "script_repo",
        "git_url": "https://example.invalid/r.git",
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "start": ["./start.sh"],
    }
    plan = build_plan(
        load_recipe_file(str(write_recipe(tmp_path, "script", launch))), models_dir=sandbox
    )
    start = next(s for s in plan.steps if s.kind.value == "start")
    assert any(
        line.startswith("TRUST: running a script repository runs its own files")
        for line in start.details
    )
