"""Native vLLM: `vllm serve MODEL ARGS… --host H --port P`."""

from __future__ import annotations

from rigbook.launch.engines.native import NativeEngine
from rigbook.launch.logscan import LogPattern
from rigbook.launch.plan import LaunchCommand, Target
from rigbook.recipe.schema import Recipe, VllmLaunch


class VllmEngine(NativeEngine):
    kind = "vllm"
    program = "vllm"
    log_patterns = [
        LogPattern(code="E_ENGINE_MISSING", pattern=r"vllm: command not found|No module named 'vllm'", why="vLLM is not installed"),
    ]

    def model_id(self, recipe: Recipe, spec: VllmLaunch) -> str | None:
        if "--served-model-name" in spec.args:
            return spec.args[spec.args.index("--served-model-name") + 1]
        return super().model_id(recipe, spec) or spec.model

    def command(self, recipe: Recipe, spec: VllmLaunch, target: Target) -> LaunchCommand:
        model = self.local_model(recipe, spec, target)
        args = self.args(spec, target)
        if model != spec.model and "--served-model-name" not in args:
            # Serve the fetched folder under the name the recipe's clients use.
            args += ["--served-model-name", self.model_id(recipe, spec)]
        return LaunchCommand(argv=["vllm", "serve", model, *args], env=self.env(spec, target))
