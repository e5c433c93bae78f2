"""The docker catalog recipe launched for real: up → LIVE → smoke → status → logs → bench → down,
and no container left in any state."""

import json
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.docker.conftest import RECIPE, containers
from tests.launch.helpers import rigbook


@pytest.mark.e2e
def test_docker_recipe_up_smoke_bench_down(tmp_path: Path, no_leftovers):
    port = free_port()
    name = "docker-run-e2e"
    done = rigbook(
        "up",
        RECIPE,
        "--yes",
        "--allow",
        "network-host",
        "--port",
        str(port),
        "--name",
        name,
        "--timeout",
        "240",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"LIVE on port {port}" in done.stdout and "smollm2-135m-instruct" in done.stdout
    try:
        [(running, state)] = [line.split(" ", 1) for line in containers()]
        assert running == f"rigbook-{name}" and state.startswith("Up")

        smoked = rigbook("smoke", f"http://127.0.0.1:{port}", "--json")
        assert smoked.returncode == 0, smoked.stderr
        assert json.loads(smoked.stdout)["reply"]

        runs = json.loads(rigbook("status", "--json").stdout)
        assert [(r["name"], r["port"], r["healthy"]) for r in runs] == [(name, port, True)]

        logs = rigbook("logs", name)
        assert logs.returncode == 0 and "llama_server" in logs.stdout

        out = tmp_path / "c2.json"
        bench = rigbook(
            "bench",
            f"http://127.0.0.1:{port}",
            "--profile",
            "quick",
            "--concurrency",
            "2",
            "--requests",
            "2",
            "--max-tokens",
            "16",
            "--recipe",
            RECIPE,
            "--out",
            str(out),
            "--json",
            timeout=400,
        )
        assert bench.returncode == 0, bench.stdout + bench.stderr
        result = json.loads(out.read_text())
        assert result["cells"][0]["valid"] and result["cells"][0]["metrics"]["requests_ok"] == 2
        assert result["conditions"]["engine"] == "llama.cpp"
    finally:
        stopped = rigbook("down", name, "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)[0]["gone"] is True
    assert containers() == []
