"""llama.cpp's own HTTP server, ``llama-server``: parallel slots, continuous batching, /health, /metrics.

rigbook sets what it owns — model file, host, port, slots, batching, context,
GPU layers, the served name, ``--metrics`` and ``--jinja`` — from the recipe
and this machine; the recipe's own values for those options are author-side
and replaced. The program is ``RIGBOOK_LLAMA_SERVER``,
else ``llama-server`` on PATH, else the venv's own: ``make setup`` links the one built into the
llama-cpp-python wheel beside the venv's python.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import ClassVar

from rigbook.launch.engines.base import Engine, step
from rigbook.launch.engines.llama_cpp import gguf_path
from rigbook.launch.logscan import LogPattern
from rigbook.launch.placeholders import cuda_env, drop_options, gpu_env_defaults, substitute
from rigbook.launch.plan import LaunchCommand, StepKind, Target
from rigbook.openai.urls import MODELS_PATH
from rigbook.recipe.schema import LlamaServerLaunch, Recipe

PROGRAM = "llama-server"
BINARY_ENV = "RIGBOOK_LLAMA_SERVER"

# Options rigbook sets itself. Those in VALUED take a value; the rest are flags.
VALUED = {
    "--host",
    "--port",
    "-m",
    "--model",
    "-np",
    "--parallel",
    "-c",
    "--ctx-size",
    "-ngl",
    "--gpu-layers",
    "--n-gpu-layers",
    "-a",
    "--alias",
}
FLAGS = {
    "--metrics",
    "--jinja",
    "--no-jinja",
    "-cb",
    "--cont-batching",
    "-nocb",
    "--no-cont-batching",
}


def find_program(spec: LlamaServerLaunch) -> Path | None:
    """The llama-server program this launch runs, or None when it is not installed."""
    # The recipe's `binary` can only say llama-server: the program is the user's choice, never a
    # recipe's.
    name = os.environ.get(BINARY_ENV) or PROGRAM
    if "/" in name:
        path = Path(name).expanduser()
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return Path(found)
    # `make setup` links llama-server (from the llama-cpp-python wheel) into the venv's bin, which
    # need not be on PATH.
    beside = Path(sys.executable).parent / name
    return beside if beside.is_file() and os.access(beside, os.X_OK) else None


def drop_mapped(args: list[str]) -> tuple[list[str], list[str]]:
    """``args`` without the options rigbook sets (valued ones with their value); and what was dropped."""
    kept, dropped = drop_options(args, VALUED)
    flags = [a for a in kept if a in FLAGS]
    return [a for a in kept if a not in FLAGS], dropped + flags


class LlamaServerEngine(Engine):
    kind = "llama_server"
    ready_paths = ("/health", MODELS_PATH)  # /health answers 503 while the model loads
    # Lines from real runs of the vendored llama-server (tests/launch/test_llama_server_e2e.py provokes each).
    log_patterns: ClassVar[list[LogPattern]] = [
        LogPattern(
            code="E_FILE",
            pattern=r"gguf_init_from_file: failed to open GGUF file|failed to open GGUF file",
            why="the model file is missing or cannot be read",
        ),
        LogPattern(
            code="E_PORT",
            pattern=r"couldn't bind HTTP server socket",
            why="the port the engine listens on is taken",
        ),
        LogPattern(
            code="E_GPU_MEMORY",
            pattern=r"cudaMalloc failed: out of memory|"
            r"failed to allocate CUDA\d* buffer|CUDA error: out of memory",
            why="the GPU ran out of memory for the weights or the KV cache",
        ),
        LogPattern(
            code="E_KV_CACHE",
            pattern=r"failed to allocate buffer for kv cache|"
            r"failed to allocate CPU buffer of size|llama_init_from_model: failed to initialize the context",
            why="the KV cache for the context asked for (n_ctx) could not be allocated",
        ),
    ]

    def model_path(self, spec: LlamaServerLaunch, target: Target) -> Path:
        """The GGUF file the server loads."""
        return gguf_path(spec, target)

    def fetch_steps(self, recipe: Recipe, spec: LlamaServerLaunch, target: Target):
        program = find_program(spec)
        found = (
            f"found at {program}"
            if program
            else "not found: `make setup` builds it with the pinned llama-cpp-python"
        )
        version = recipe.ext.engine_version if recipe.ext.engine_version else PROGRAM
        details = [
            found,
            f"{spec.parallel} slot(s), continuous batching {'on' if spec.cont_batching else 'off'}",
        ]
        return [step(StepKind.engine, f"engine: {version}", details)]

    def command(self, recipe: Recipe, spec: LlamaServerLaunch, target: Target) -> LaunchCommand:
        program = find_program(spec)
        kept, _ = drop_mapped(spec.args)
        # A drafter's path is checked as this machine's (rules/table.py); the engine gets the same.
        kept = substitute(kept, {"MODELS_DIR": str(target.models_dir)})
        argv = [
            str(program or PROGRAM),
            "--model",
            str(self.model_path(spec, target)),
            "--host",
            target.host,
            "--port",
            str(target.port),
            "--parallel",
            str(spec.parallel),
            "--cont-batching" if spec.cont_batching else "--no-cont-batching",
            "--metrics",
            "--jinja",
        ]
        served = self.model_id(recipe, spec)
        if served:
            argv += ["--alias", served]
        if spec.n_ctx:
            argv += ["--ctx-size", str(spec.n_ctx)]
        # GPU builds offload layers; on the CPU slot nothing is offloaded.
        layers = spec.n_gpu_layers if spec.n_gpu_layers is not None else 999
        argv += ["--n-gpu-layers", str(layers) if target.gpus else "0"]
        env = {**gpu_env_defaults(), **cuda_env(target)} if target.gpus else cuda_env(target)
        return LaunchCommand(argv=argv + kept, env=env)

    def notes(self, recipe: Recipe, spec: LlamaServerLaunch, target: Target) -> list[str]:
        _, dropped = drop_mapped(spec.args)
        notes = [f"replaced author-side option: {d}" for d in dropped]
        if spec.n_ctx and spec.parallel > 1:
            notes.append(
                f"each of the {spec.parallel} slots gets {spec.n_ctx // spec.parallel} tokens of context"
            )
        return notes

    def missing(self, spec: LlamaServerLaunch) -> str | None:
        if find_program(spec) is None:
            return (
                f"{os.environ.get(BINARY_ENV) or PROGRAM} is not installed: `make setup` builds it, or put it on PATH, "
                f"or set {BINARY_ENV} to its path"
            )
        return None
