"""The option tables are complete for the pinned engines, and the checker reads argv as they do.

Each completeness test extracts the installed engine's option list the way
``scripts/option_tables.py`` does and fails when the engine has an option the
committed table does not classify, or when the classification the script
gives today differs from the committed one: an engine upgrade cannot silently
widen what a recipe may do.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

from rigbook.launch.engines.llama_server import FLAGS, VALUED
from rigbook.launch.rules.table import (
    OPTION_ALLOW,
    ValueKind,
    Verdict,
    load_table,
    table_dangers,
    table_names,
)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "option_tables.py"
KINDS = ("llama_server", "llama_cpp", "vllm", "sglang", "docker")


def _script():
    spec = importlib.util.spec_from_file_location("option_tables", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _complete(kind: str, raw: dict) -> None:
    script = _script()
    names = table_names(kind)
    missing = sorted(n for o in raw["options"] for n in o["names"] if n not in names)
    assert not missing, f"{kind} has options its table does not classify: {missing}"
    regenerated = script.classify(kind, raw)
    committed = load_table(kind)
    assert committed is not None
    mine = {tuple(r.names): r.verdict.value for r in committed.options}
    theirs = {tuple(r["names"]): r["verdict"] for r in regenerated["options"]}
    assert mine == theirs, "regenerate with scripts/option_tables.py " + kind


def _llama_server() -> str | None:
    found = shutil.which("llama-server") or str(Path(sys.executable).parent / "llama-server")
    return found if os.access(found, os.X_OK) else None


@pytest.mark.e2e
def test_llama_server_table_classifies_every_option_of_the_pinned_llama_server():
    binary = _llama_server()
    if binary is None:
        pytest.skip("llama-server is not installed (make setup-test builds it)")
    _complete("llama_server", _script().llama_server_options(binary))


@pytest.mark.e2e
def test_vllm_table_classifies_every_option_of_the_pinned_vllm():
    python = os.environ.get("RIGBOOK_VLLM_PYTHON")
    if not python or not os.access(python, os.X_OK):
        pytest.skip("RIGBOOK_VLLM_PYTHON is not set to the vLLM venv (make setup-vllm)")
    script = _script()
    _complete("vllm", script.run_argparse(python, script.VLLM_BUILD))


def test_docker_table_classifies_every_docker_run_option():
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("the docker client is not installed (make system-deps)")
    _complete("docker", _script().docker_options(docker))


def test_llama_cpp_table_classifies_every_llama_cpp_python_server_setting():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (make setup-test)")
    script = _script()
    _complete("llama_cpp", script.run_argparse(sys.executable, script.LLAMA_CPP_BUILD))


@pytest.mark.parametrize("kind", KINDS)
def test_every_table_loads_and_classifies_each_name_once(kind):
    table = load_table(kind)
    assert table is not None and len(table.options) > 20
    names = [n for r in table.options for n in r.names]
    assert len(names) == len(set(names))
    for rule in table.options:
        if rule.verdict == Verdict.allow:
            assert rule.value != ValueKind.json
            assert rule.value != ValueKind.path or rule.root == "models", rule.names


def test_llama_server_replaced_options_are_the_ones_the_adapter_drops():
    table = load_table("llama_server")
    assert table is not None
    replaced = {n for r in table.options if r.verdict == Verdict.replaced for n in r.names}
    assert replaced <= VALUED | FLAGS


@pytest.mark.parametrize(
    ("kind", "argv", "says"),
    [
        ("vllm", ["--tool-parser-plug", "x.py"], "--tool-parser-plugin"),
        ("vllm", ["--log_config_file=/x"], "--log-config-file"),
        ("vllm", ["--served_model_name", "x"], "--served-model-name"),
        ("vllm", ["--hos", "0.0.0.0"], "--host"),
        ("vllm", ["--max-model-len", "9" * 30], "whole number"),
        ("vllm", ["--dtype", "/etc/passwd"], "is not one of"),
        ("vllm", ["--tensor-parallel-size", "2", "extra"], "positional"),
        ("vllm", ["--max"], "prefix of several"),
        ("llama_server", ["--log-file", "x.pth"], "--log-file"),
        ("llama_server", ["--chat-template-file", "/proc/self/environ"], "--chat-template-file"),
        ("llama_server", ["--model-draft", "/etc/hostname"], "outside the models folder"),
        ("sglang", ["--enable-custom-logit-processor"], "pickled"),
        ("llama_cpp", ["--chat_format", "a/b"], "plain name"),
    ],
)
def test_argv_is_read_as_the_engine_reads_it(kind, argv, says, tmp_path):
    dangers = table_dangers(kind, argv, models_dir=tmp_path)
    assert dangers and says in " ".join(d.what for d in dangers), dangers
    assert all(d.allow is None for d in dangers)


def test_an_option_the_table_does_not_list_needs_allow_option():
    dangers = table_dangers("vllm", ["--brand-new-flag", "3", "--max-model-len", "2048"])
    assert [d.allow for d in dangers] == [OPTION_ALLOW + "--brand-new-flag"]
    # llama-server reads no prefixes: `--ctx` is no option of it.
    dangers = table_dangers("llama_server", ["--ctx", "9"])
    assert [d.allow for d in dangers] == [OPTION_ALLOW + "--ctx"]


def test_normal_options_of_the_catalog_pass(tmp_path):
    (tmp_path / "d.gguf").touch()
    assert (
        table_dangers(
            "vllm",
            [
                "--dtype",
                "float32",
                "--max-model-len",
                "2048",
                "--max-num-seqs",
                "16",
                "--enforce-eager",
                "--host",
                "x",
                "--port=1",
            ],
        )
        == []
    )
    assert (
        table_dangers(
            "llama_server",
            ["-c", "4096", "--threads", "4", "--model-draft", str(tmp_path / "d.gguf")],
            models_dir=tmp_path,
        )
        == []
    )


def test_a_drafters_tuning_passes_and_its_other_files_and_devices_do_not(tmp_path):
    """A GPU speculation recipe sets the drafter's length, layers, threads and KV type: typed values
    (refused before, so no drafter recipe could run). Its weights stay a path in the models folder;
    its device, CPU mask and Hugging Face repo stay refused."""
    (tmp_path / "d.gguf").touch()
    tuning = [
        "--model-draft", str(tmp_path / "d.gguf"), "--n-gpu-layers-draft", "999",
        "--spec-type", "draft-simple", "--spec-draft-n-max", "3", "--spec-draft-n-min", "1",
        "--spec-draft-p-min", "0.7", "--threads-draft", "2", "-ctkd", "q8_0",
        "--spec-synth-len", "3.0",
    ]  # fmt: skip
    assert table_dangers("llama_server", tuning, models_dir=tmp_path) == []
    for refused in (["--device-draft", "dev1"], ["--hf-repo-draft", "a/b"], ["-Cd", "ff"]):
        assert table_dangers("llama_server", refused, models_dir=tmp_path), refused
