"""`rigbook check` end to end: this CPU machine, saved rigs, bad input."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.rig.probe import probe_rig
from tests.conftest import FIXTURES, SEED_RECORD, free_port

runner = CliRunner()
RIGS = FIXTURES / "rigs"


def test_seed_record_on_this_cpu_machine_exits_2():
    result = runner.invoke(app, ["check", str(SEED_RECORD), "--json", "--port", str(free_port())])
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    found = [f["code"] for f in report["findings"]]
    assert "E_GPU_COUNT" in found and not report["ok"]
    docker = probe_rig().docker
    assert ("E_DOCKER" in found) == (not docker.available)
    assert ("E_TOOLKIT" in found) == (not docker.nvidia_ready)


def test_embedded_recipe_passes_here():
    result = runner.invoke(
        app, ["check", "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp", "--port", str(free_port())]
    )
    assert result.exit_code == 0, result.output
    assert ": ok" in result.stdout


def test_saved_rig_table_output():
    result = runner.invoke(
        app,
        [
            "check",
            "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w",
            "--rig",
            str(RIGS / "2x-rtx-pro-6000-300w-p2p-broken.rig.json"),
        ],
    )
    assert result.exit_code == 2
    assert (
        "E_P2P" in result.stdout and "W_LICENSE" in result.stdout and "1 error(s)" in result.stdout
    )


def test_saved_rig_gpus_option():
    result = runner.invoke(
        app,
        [
            "check",
            "glm-5-3-flash-exl3-on-2x-rtx-pro-6000-blackwell-tensorfold-300w",
            "--json",
            "--rig",
            str(RIGS / "4x-rtx-pro-6000-250w-one-busy.rig.json"),
            "--gpus",
            "2,3",
        ],
    )
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["gpus"] == [2, 3]
    assert next(f["code"] for f in report["findings"]) == "E_GPU_MEMORY"


def test_bad_gpus_option_is_coded_error():
    result = runner.invoke(
        app, ["check", "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp", "--gpus", "zero"]
    )
    assert result.exit_code == 2
    assert "error[E_INPUT]" in result.stderr and "--gpus 0,1" in result.stderr


def test_unknown_recipe_and_bad_rig_file(tmp_path):
    assert runner.invoke(app, ["check", "no-such-recipe"]).exit_code == 2
    bad = tmp_path / "rig.json"
    bad.write_text("[]")
    result = runner.invoke(
        app, ["check", "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp", "--rig", str(bad), "--json"]
    )
    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["code"] == "E_INPUT"
