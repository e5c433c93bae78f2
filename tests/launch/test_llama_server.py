"""The llama_server launch kind: the command rigbook builds, what it replaces, refuses and reports missing.

The real-server behaviour (slots, /health, /metrics, the failure log lines) is in
test_llama_server_e2e.py; these tests need no llama-server binary.
"""

import json
import os
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.launch.helpers import rigbook, write_recipe

EMBEDDED = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"


def fake_program(tmp_path: Path) -> Path:
    """An executable file named llama-server (never started by these tests)."""
    program = tmp_path / "bin" / "llama-server"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 1\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def plan_of(*args: str, env: dict[str, str] | None = None) -> dict:
    done = rigbook("plan", *args, "--json", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_the_embedded_default_runs_llama_server_with_four_slots_metrics_and_the_models_template(
    tmp_path,
):
    program = fake_program(tmp_path)
    plan = plan_of(EMBEDDED, "--port", "18123", env={"RIGBOOK_LLAMA_SERVER": str(program)})
    argv = plan["command"]["argv"]
    assert plan["kind"] == "llama_server" and argv[0] == str(program)
    value = {
        opt: argv[argv.index(opt) + 1]
        for opt in ("--port", "--host", "--parallel", "--alias", "--ctx-size", "--n-gpu-layers")
    }
    assert value == {
        "--port": "18123",
        "--host": "127.0.0.1",
        "--parallel": "4",
        "--alias": "smollm2-135m-instruct",
        "--ctx-size": "4096",
        "--n-gpu-layers": "0",
    }  # the CPU slot offloads nothing
    assert {"--cont-batching", "--metrics", "--jinja"} <= set(argv)
    assert argv[argv.index("--model") + 1].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert plan["command"]["env"] == {"CUDA_VISIBLE_DEVICES": ""}
    ready = next(s for s in plan["steps"] if s["kind"] == "ready")
    assert (
        "/health, then GET" in ready["details"][0]
        and "/v1/models answers 200" in ready["details"][0]
    )


def test_author_side_options_are_replaced_and_the_rest_kept(tmp_path):
    program = fake_program(tmp_path)
    recipe = write_recipe(
        tmp_path,
        "k-llama-server",
        {
            "kind": "llama_server",
            "model_path": "${MODELS_DIR}/m.gguf",
            "parallel": 8,
            "cont_batching": False,
            "n_ctx": 8192,
            "args": [
                "--port",
                "9999",
                "--host",
                "0.0.0.0",
                "-np",
                "2",
                "--metrics",
                "--no-jinja",
                "--threads",
                "3",
            ],
        },
    )
    plan = plan_of(
        str(recipe),
        "--port",
        "18124",
        "--models-dir",
        str(tmp_path / "models"),
        env={"RIGBOOK_LLAMA_SERVER": str(program)},
    )
    argv = plan["command"]["argv"]
    assert argv[argv.index("--model") + 1] == str(tmp_path / "models" / "m.gguf")
    assert argv.count("--port") == 1 and argv[argv.index("--port") + 1] == "18124"
    assert argv.count("--host") == 1 and "0.0.0.0" not in argv and argv.count("--metrics") == 1
    assert argv[argv.index("--parallel") + 1] == "8" and "-np" not in argv
    assert "--no-cont-batching" in argv and "--no-jinja" not in argv and "--jinja" in argv
    assert argv[-2:] == ["--threads", "3"]
    start = next(s for s in plan["steps"] if s["kind"] == "start")
    shown = " ".join(start["details"])
    assert (
        "replaced author-side option: --port 9999" in shown
        and "replaced author-side option: --no-jinja" in shown
    )
    assert "each of the 8 slots gets 1024 tokens of context" in shown


def test_a_drafter_in_the_models_folder_reaches_the_engine_as_this_machines_path(tmp_path):
    """`--model-draft ${MODELS_DIR}/d.gguf` was checked as the mapped path but passed to the engine
    as written, so llama-server looked for a file named `${MODELS_DIR}/d.gguf`."""
    program = fake_program(tmp_path)
    models = tmp_path / "models"
    models.mkdir()
    (models / "d.gguf").touch()
    recipe = write_recipe(
        tmp_path,
        "k-drafter",
        {
            "kind": "llama_server",
            "model_path": "${MODELS_DIR}/m.gguf",
            "args": ["--model-draft", "${MODELS_DIR}/d.gguf", "--spec-draft-n-max", "3"],
        },
    )
    plan = plan_of(
        str(recipe),
        "--models-dir",
        str(models),
        env={"RIGBOOK_LLAMA_SERVER": str(program)},
    )
    argv = plan["command"]["argv"]
    assert argv[argv.index("--model-draft") + 1] == str(models / "d.gguf")
    assert not any("${" in item for item in argv)


def test_the_models_own_tools_are_refused(tmp_path):
    program = fake_program(tmp_path)
    recipe = write_recipe(
        tmp_path,
        "k-tools",
        {
            "kind": "llama_server",
            "model_path": str(tmp_path / "m.gguf"),
            "args": ["--tools", "all"],
        },
    )
    # The model lies in the models folder: a path outside it is refused first.
    done = rigbook(
        "up",
        str(recipe),
        "--yes",
        "--port",
        "18125",
        "--models-dir",
        str(tmp_path),
        "--json",
        env={"RIGBOOK_LLAMA_SERVER": str(program)},
    )
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_UNSAFE" and "shell commands" in error["message"]
    # No --allow lets a recipe give the model a shell (the old remedy named one --allow rejected).
    assert "--allow" not in error["remedy"] and "fix the recipe" in error["remedy"]


def test_a_missing_program_is_e_engine_missing_naming_how_to_get_it(tmp_path):
    recipe = write_recipe(
        tmp_path,
        "k-missing",
        {"kind": "llama_server", "model_path": str(tmp_path / "m.gguf")},
    )
    done = rigbook(
        "up",
        str(recipe),
        "--yes",
        "--port",
        "18126",
        "--models-dir",
        str(tmp_path),
        "--json",
        env={"RIGBOOK_LLAMA_SERVER": str(tmp_path / "no-such-server")},
    )
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_ENGINE_MISSING" and "make setup" in error["message"]
    assert "no-such-server" in error["message"]


def test_the_program_make_builds_beside_the_venvs_python_is_found_without_path(
    tmp_path, monkeypatch
):
    from rigbook.launch.engines import llama_server
    from rigbook.recipe.schema import LlamaServerLaunch

    program = fake_program(tmp_path)
    monkeypatch.setattr(llama_server.sys, "executable", str(program.parent / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("RIGBOOK_LLAMA_SERVER", raising=False)
    assert llama_server.find_program(LlamaServerLaunch(model_path="m.gguf")) == program
    os.chmod(program, 0o644)
    assert llama_server.find_program(LlamaServerLaunch(model_path="m.gguf")) is None


def test_a_real_gpu_out_of_memory_log_maps_to_e_gpu_memory():
    """llama-server's CUDA build on an H200, asked for a 4M-token KV cache (about 500 GB) with
    --fit off: its own log (benchmarks/h200/llama-server/run.sh provoked it)."""
    from rigbook.codes import CODES
    from rigbook.launch.engines.llama_server import LlamaServerEngine
    from rigbook.launch.logscan import explain_exit

    log = Path(__file__).parents[1] / "fixtures" / "llama-server-logs" / "h200-gpu-oom.log"
    hit = explain_exit(log.read_text().splitlines(), LlamaServerEngine.log_patterns)
    assert hit is not None and hit.code == "E_GPU_MEMORY"
    assert "cudaMalloc failed: out of memory" in hit.line
    assert CODES["E_GPU_MEMORY"].remedy


def test_the_program_is_the_variables_then_paths_then_the_venvs_never_the_recipes(
    tmp_path, monkeypatch
):
    """Each place in the finder's order wins over the ones after it. The venv's comes last: a link,
    as `make setup` makes, to the program in the llama-cpp-python wheel. A recipe's ``binary`` can
    only say llama-server, and does not move the user's choice aside."""
    from rigbook.launch.engines import llama_server
    from rigbook.recipe.schema import LlamaServerLaunch

    def program_in(folder: str) -> Path:
        (tmp_path / folder).mkdir()
        return fake_program(tmp_path / folder)

    in_wheel, on_path, from_env = (program_in(f) for f in ("wheel", "path", "env"))
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "llama-server").symlink_to(in_wheel)
    monkeypatch.setattr(llama_server.sys, "executable", str(venv_bin / "python"))
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("RIGBOOK_LLAMA_SERVER", str(from_env))
    spec = LlamaServerLaunch(model_path="m.gguf")
    recipes = LlamaServerLaunch(model_path="m.gguf", binary="llama-server")
    assert llama_server.find_program(recipes) == from_env
    assert llama_server.find_program(spec) == from_env
    with pytest.raises(ValidationError):
        LlamaServerLaunch(model_path="m.gguf", binary=str(on_path))
    monkeypatch.delenv("RIGBOOK_LLAMA_SERVER")
    assert llama_server.find_program(spec) == on_path
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert llama_server.find_program(spec) == venv_bin / "llama-server"
    in_wheel.unlink()  # a link left behind by a venv whose wheel is gone finds nothing
    assert llama_server.find_program(spec) is None
