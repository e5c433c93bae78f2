"""`rigbook rig` on this machine (no GPU here)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.rig.model import load_rig

runner = CliRunner()


def test_rig_json_without_gpu_is_valid_with_reason():
    result = runner.invoke(app, ["rig", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["gpus"] == [] and doc["reason"]
    assert doc["host"]["cpu_count"] >= 1
    assert any(t["name"] == "bash" and t["path"] for t in doc["tools"])
    assert "live" not in doc


def test_rig_save_writes_a_loadable_document(tmp_path):
    out = tmp_path / "rig.json"
    result = runner.invoke(app, ["rig", "--save", str(out), "--models-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rig = load_rig(out)
    assert rig.models_disk.path == str(tmp_path) and rig.models_disk.free_bytes > 0
    assert "saved" in result.stdout


def test_rig_save_refuses_to_overwrite_without_yes(tmp_path):
    out = tmp_path / "rig.json"
    out.write_text("mine")
    result = runner.invoke(app, ["rig", "--save", str(out)], input="n\n")
    assert result.exit_code == 2
    assert out.read_text() == "mine"
    assert runner.invoke(app, ["rig", "--save", str(out), "--yes"]).exit_code == 0
    assert load_rig(out).source == "probe"
