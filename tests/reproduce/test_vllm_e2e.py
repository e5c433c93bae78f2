"""`rigbook reproduce` of the vLLM CPU recipe: LIVE, the cells with their intervals, the verdict table,
and the engine stopped. Needs `make setup-vllm` (as tests/launch/test_vllm_e2e.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.launch.helpers import rigbook

RECIPE = "smollm2-135m-instruct-on-cpu-vllm"
READY_S = 1200
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(READY_S + 2400)]


def test_reproduce_the_vllm_cpu_recipe(tmp_path: Path) -> None:
    python = os.environ.get("RIGBOOK_VLLM_PYTHON")
    models = os.environ.get("RIGBOOK_VLLM_MODELS_DIR")
    if not python or not models:
        pytest.skip("vLLM is not set up: `make setup-vllm`, or run `make test`")
    port = free_port()
    out = tmp_path / "rep"
    done = rigbook(
        "reproduce",
        RECIPE,
        "--yes",
        "--port",
        str(port),
        "--models-dir",
        models,
        "--timeout",
        str(READY_S),
        "--profile",
        "quick",
        "--max-tokens",
        "8",
        "--concurrency",
        "1,2",
        "--requests",
        "2",
        "--max-repeats",
        "3",
        "--stall-timeout",
        "600",
        "--out",
        str(out),
        env={"RIGBOOK_VLLM_PYTHON": python, "RIGBOOK_VLLM_MODELS_DIR": models},
        timeout=READY_S + 2000,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"LIVE on port {port}" in done.stdout and "claims against this rig" in done.stdout
    assert "cell concurrency 2: aggregate" in done.stdout
    assert json.loads(rigbook("status", "--json").stdout) == []
    result = json.loads((out / "result.json").read_text())
    assert result["conditions"]["engine"] == "vllm"
    assert [lv["concurrency"] for lv in result["intervals"]] == [1, 2]
