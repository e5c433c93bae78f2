"""The vLLM CPU recipe for real: up, LIVE, smoke, bench at 1 and 4, report, compare with the
llama.cpp run, down with nothing left; Ctrl-C during the start; a real vLLM failure's code.

Needs the CPU build from `make setup-vllm`: `make test` passes RIGBOOK_VLLM_PYTHON (its venv's
Python) and RIGBOOK_VLLM_MODELS_DIR (where it derived the model folder). vLLM starts in about 45 s
on a quiet two-core machine and in several minutes on a loaded one, hence the long timeouts.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import free_port
from tests.in_process import rigbook_here
from tests.launch.helpers import rigbook

RECIPE = "smollm2-135m-instruct-on-cpu-vllm"
LLAMA_CPP_RESULT = Path(__file__).parent.parent / "fixtures" / "results" / "cpu" / "result.json"
READY_S = 1200
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(READY_S + 2400)]


@pytest.fixture
def vllm_env() -> dict[str, str]:
    """RIGBOOK_VLLM_PYTHON and the models folder `make setup-vllm` wrote; skipped without them."""
    python = os.environ.get("RIGBOOK_VLLM_PYTHON")
    models = os.environ.get("RIGBOOK_VLLM_MODELS_DIR")
    if not python or not models:
        pytest.skip(
            "vLLM is not set up: `make setup-vllm`, or run `make test`, which passes "
            "RIGBOOK_VLLM_PYTHON and RIGBOOK_VLLM_MODELS_DIR"
        )
    return {"RIGBOOK_VLLM_PYTHON": python, "RIGBOOK_VLLM_MODELS_DIR": models}


def group(pgid: int) -> list[psutil.Process]:
    """Live processes of a process group."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def titles(procs: list[psutil.Process]) -> set[str]:
    """vLLM names its engine processes VLLM::EngineCore and VLLM::Worker."""
    names = set()
    for proc in procs:
        try:
            names.add(" ".join(proc.cmdline()))
        except psutil.Error:
            continue
    return {t for t in ("VLLM::EngineCore", "VLLM::Worker") if any(t in n for n in names)}


def test_vllm_recipe_up_bench_report_compare_down(tmp_path: Path, vllm_env):
    port = free_port()
    models = vllm_env["RIGBOOK_VLLM_MODELS_DIR"]
    done = rigbook(
        "up",
        RECIPE,
        "--yes",
        "--port",
        str(port),
        "--models-dir",
        models,
        "--name",
        "vllm-e2e",
        "--timeout",
        str(READY_S),
        env=vllm_env,
        timeout=READY_S + 120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"LIVE on port {port}" in done.stdout and "model smollm2-135m-instruct" in done.stdout
    assert "engine 0.32.0" in done.stdout  # from /version
    assert "-m vllm.entrypoints.openai.api_server" in done.stdout + done.stderr  # the command shown
    runs = json.loads(rigbook_here("status", "--json").stdout)
    pgid = runs[0]["pid"]
    try:
        assert [(r["name"], r["healthy"]) for r in runs] == [("vllm-e2e", True)]
        engine = group(pgid)
        assert titles(engine) == {"VLLM::EngineCore", "VLLM::Worker"}

        smoked = rigbook_here("smoke", f"http://127.0.0.1:{port}", "--json")
        assert smoked.returncode == 0 and json.loads(smoked.stdout)["reply"], smoked.stderr

        out = tmp_path / "vllm.json"
        # A long stall limit: on a loaded two-core box four prompts' first tokens can take a minute.
        bench = rigbook_here(
            "bench",
            f"http://127.0.0.1:{port}",
            "--profile",
            "quick",
            "--concurrency",
            "1,4",
            "--requests",
            "4",
            "--stall-timeout",
            "600",
            "--recipe",
            RECIPE,
            "--out",
            str(out),
        )
        assert bench.returncode == 0, bench.stdout + bench.stderr
        result = json.loads(out.read_text())
        assert (result["conditions"]["engine"], result["conditions"]["engine_version"]) == (
            "vllm",
            "0.32.0",
        )
        one, four = result["cells"]
        for cell in (one, four):
            assert cell["valid"], cell["invalid_reasons"]
            assert cell["token_count_source"] == "server_continuous"
            assert all(r["output_tokens"] == 48 for r in cell["requests"] if not r["warmup"])
        # vLLM batches: all four streams of the c4 cell produce tokens before any of them ends
        # (llama-cpp-python's server, which queues, starts the second only after the first).
        measured = [r for r in four["requests"] if not r["warmup"]]
        assert max(r["first_token_s"] for r in measured) < min(r["done_s"] for r in measured)

        report = rigbook_here("report", str(out), "--out", str(tmp_path / "report"))
        assert report.returncode == 0, report.stderr
        assert "vllm 0.32.0" in (tmp_path / "report" / "report.md").read_text()

        compared = rigbook_here("compare", str(out), str(LLAMA_CPP_RESULT), "--json")
        if result["perf_points"]:
            assert compared.returncode == 0, compared.stderr + compared.stdout
            text = compared.stdout
            assert "vllm" in text and "llama.cpp" in text
        else:
            # The engine shares the two cores with the client: a stall beyond the limit marks the
            # cells client_bound, which then give no perf point, and compare says there is none.
            assert all(c["client_bound"] and c["client"]["reason"] for c in (one, four))
            assert json.loads(compared.stdout)["error"]["code"] == "E_INPUT"
    finally:
        stopped = rigbook("down", "vllm-e2e", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)[0]["gone"] is True
    assert group(pgid) == [] and not any(
        p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        for p in engine
        if psutil.pid_exists(p.pid)
    )
    assert json.loads(rigbook_here("status", "--json").stdout) == []


def test_ctrl_c_while_vllm_starts_stops_engine_core_and_worker(tmp_path: Path, vllm_env):
    port = free_port()
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rigbook",
            "up",
            RECIPE,
            "--yes",
            "--port",
            str(port),
            "--models-dir",
            vllm_env["RIGBOOK_VLLM_MODELS_DIR"],
            "--name",
            "vllm-ctrl-c",
            "--timeout",
            str(READY_S),
        ],
        env={**os.environ, **vllm_env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + READY_S
        engine: list[psutil.Process] = []
        while time.monotonic() < deadline and up.poll() is None:
            runs = json.loads(rigbook_here("status", "--json").stdout or "[]")
            engine = group(runs[0]["pid"]) if runs else []
            if "VLLM::Worker" in titles(engine):
                break
            time.sleep(2)
        assert "VLLM::Worker" in titles(engine), "vLLM never started its Worker"
        up.send_signal(signal.SIGINT)
        out, err = up.communicate(timeout=120)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 130, out + err
    time.sleep(1)
    assert [p for p in engine if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert json.loads(rigbook_here("status", "--json").stdout) == []


def test_a_missing_model_folder_is_e_model_path_from_vllm_own_log(tmp_path: Path, vllm_env):
    empty = tmp_path / "no-models-here"
    empty.mkdir()
    done = rigbook(
        "up",
        RECIPE,
        "--yes",
        "--json",
        "--port",
        str(free_port()),
        "--models-dir",
        str(empty),
        "--timeout",
        str(READY_S),
        env=vllm_env,
        timeout=READY_S + 120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_MODEL_PATH", error
    assert str(empty / "smollm2-135m-instruct-bf16") in error["message"]
    assert "make setup-vllm" in error["remedy"]
    assert json.loads(rigbook_here("status", "--json").stdout) == []
