"""`rigbook up` with the embedded recipe and the real llama.cpp server, then smoke, status, a bench at
concurrency 2, a refused second up, down."""

import json
from pathlib import Path

import psutil
import pytest

from tests.conftest import free_port
from tests.launch.helpers import rigbook


@pytest.mark.e2e
def test_up_smoke_status_down_leaves_nothing_behind(tmp_path: Path):
    port = free_port()
    done = rigbook("up", "--yes", "--port", str(port), "--name", "e2e", "--timeout", "180")
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"LIVE on port {port}" in done.stdout and "smollm2-135m-instruct" in done.stdout
    try:
        smoked = rigbook("smoke", f"http://127.0.0.1:{port}", "--json")
        assert smoked.returncode == 0, smoked.stderr
        assert json.loads(smoked.stdout)["reply"]

        runs = json.loads(rigbook("status", "--json").stdout)
        assert [(r["name"], r["port"], r["healthy"]) for r in runs] == [("e2e", port, True)]
        pid = runs[0]["pid"]
        assert psutil.pid_exists(pid)

        # Two of the recipe's four slots: both streams of a concurrency-2 cell are whole.
        out = tmp_path / "c2.json"
        bench = rigbook(
            "bench",
            f"http://127.0.0.1:{port}",
            "--profile",
            "quick",
            "--concurrency",
            "2",
            "--recipe",
            "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp",
            "--out",
            str(out),
            "--json",
        )
        assert bench.returncode == 0, bench.stdout + bench.stderr
        result = json.loads(out.read_text())
        assert result["cells"][0]["valid"] and result["cells"][0]["metrics"]["requests_ok"] == 2
        # llama-server answers owned_by "llamacpp" at /v1/models.
        assert result["conditions"]["engine"] == "llama.cpp"
        # Every prompt unique to its request: llama-server's own counter evaluated each prompt's
        # own text; only the chat template's fixed system prefix (about 30 tokens in SmolLM2's
        # template, shared by every user) may come from a slot's cache. With the old fixed
        # prompts the warm-up's prompt came back whole from the cache.
        server = result["cells"][0]["server"]
        assert server["prompt_tokens"] >= server["client_prompt_tokens"] - 2 * 32

        second = rigbook("up", "--yes", "--port", str(free_port()), "--name", "again", "--json")
        assert second.returncode == 2
        error = json.loads(second.stdout)["error"]
        assert (
            error["code"] == "E_LOCKED"
            and "'e2e'" in error["message"]
            and f"pid {pid}" in error["message"]
        )
        assert (
            "rigbook down e2e" in error["remedy"] and "--gpus" not in error["remedy"]
        )  # no other CPU to pick

        logs = rigbook("logs", "e2e")
        assert logs.returncode == 0 and "llama" in logs.stdout.lower()
    finally:
        stopped = rigbook("down", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)[0]["gone"] is True
    leftovers = [
        p
        for p in psutil.process_iter()
        if _pgid(p.pid) == pid and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert leftovers == []
    assert json.loads(rigbook("status", "--json").stdout) == []
    assert rigbook("down").returncode == 2


def _pgid(pid: int) -> int | None:
    import os

    try:
        return os.getpgid(pid)
    except OSError:
        return None
