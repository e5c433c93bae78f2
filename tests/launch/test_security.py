"""Untrusted recipes: dangerous options refused by name, argv and env never reach a shell."""

import json
import sys
import uuid
from pathlib import Path

from rigbook.launch.engines import engine_for
from rigbook.launch.planner import build_plan
from rigbook.launch.supervisor import start
from rigbook.recipe import load_recipe_file
from tests.conftest import free_port
from tests.launch.helpers import RIG_2X, rigbook, write_recipe

UNSAFE = {
    "kind": "docker",
    "image": "example/engine:1",
    "container_port": 8000,
    "args": ["--privileged", "-v", "/srv/models:/host"],
}


def test_up_refuses_privileged_and_a_root_bind_mount_naming_both(tmp_path):
    path = write_recipe(tmp_path, "unsafe", UNSAFE)
    done = rigbook(
        "up", str(path), "--yes", "--rig", str(RIG_2X), "--json", env={"PATH": "/nonexistent"}
    )
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_UNSAFE"
    assert "privileged" in error["message"] and "bind-mount" in error["message"]
    assert "--allow privileged" in error["remedy"] and "--allow bind-mount" in error["remedy"]


def test_the_dry_run_shows_the_refusal_too(tmp_path):
    path = write_recipe(tmp_path, "unsafe", UNSAFE)
    done = rigbook("up", str(path), "--dry-run")
    assert (
        done.returncode == 2
        and "error[E_UNSAFE]" in done.stdout
        and "-v /srv/models:/host" in done.stdout
    )


def test_allowing_both_by_name_gets_past_the_refusal(tmp_path):
    path = write_recipe(tmp_path, "unsafe", UNSAFE)
    done = rigbook(
        "up",
        str(path),
        "--yes",
        "--rig",
        str(RIG_2X),
        "--allow",
        "privileged",
        "--allow",
        "bind-mount",
        "--json",
        env={"PATH": "/nonexistent"},
    )
    assert done.returncode == 2
    assert (
        json.loads(done.stdout)["error"]["code"] == "E_ENGINE_MISSING"
    )  # no docker here: the next gate


def test_non_tty_without_yes_is_not_confirmed_and_nothing_starts(rigbook_home):
    done = rigbook("up", "--port", str(free_port()), "--json")
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "E_CONFIRM"
    assert not any((rigbook_home / "runs").glob("*.json"))


def test_shell_metacharacters_in_env_and_argv_stay_literal(tmp_path):
    canary = Path("/tmp") / f"pwned-{uuid.uuid4().hex}"
    evil = f"$(touch {canary}); rm -rf {tmp_path}/keep `touch {canary}` && echo hi"
    (tmp_path / "keep").mkdir()
    launch = {
        "kind": "script_repo",
        "git_url": "https://example.invalid/x.git",
        "start": [
            sys.executable,
            "-c",
            "import os, sys; print(repr(os.environ['EVIL'])); print(repr(sys.argv[1]))",
            evil,
        ],
        "env": {"EVIL": evil},
    }
    recipe = load_recipe_file(str(write_recipe(tmp_path, "echo", launch, serve={"port": 18022})))
    plan = build_plan(recipe, models_dir=tmp_path, allow=["shell"])
    command = plan.command.model_copy(update={"cwd": str(tmp_path)})
    log = tmp_path / "echo.log"
    proc = start(command, log)
    assert proc.wait(timeout=30) == 0
    printed = log.read_text().splitlines()
    assert printed == [repr(evil), repr(evil)]
    assert not canary.exists() and (tmp_path / "keep").is_dir()
    assert engine_for("script_repo").starts_process


def test_an_option_the_table_does_not_list_runs_only_with_allow_option(tmp_path):
    launch = {"kind": "vllm", "model": "org/model", "args": ["--brand-new-flag", "3"]}
    path = write_recipe(tmp_path, "new-option", launch)
    done = rigbook("up", str(path), "--dry-run", "--json", "--models-dir", str(tmp_path))
    plan = json.loads(done.stdout)
    refused = [f for s in plan["steps"] for f in s["findings"] if f["code"] == "E_UNSAFE"]
    assert done.returncode == 2 and len(refused) == 1
    assert "--allow-option --brand-new-flag" in refused[0]["remedy"]
    done = rigbook(
        "up",
        str(path),
        "--dry-run",
        "--allow-option",
        "--brand-new-flag",
        "--models-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "allowed by you: --allow-option --brand-new-flag" in done.stdout
    assert "--brand-new-flag 3" in done.stdout
    # `--allow` itself takes no option name: it says which flag does.
    done = rigbook("up", str(path), "--dry-run", "--allow", "--brand-new-flag")
    assert done.returncode == 2 and "--allow-option" in done.stderr + done.stdout
