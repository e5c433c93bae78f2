"""Native SGLang: `python -m sglang.launch_server --model-path MODEL ARGS… --host H --port P`."""

from __future__ import annotations

import importlib.util
import sys
from typing import ClassVar

from rigbook.launch.engines.native import NativeEngine
from rigbook.launch.logscan import LogPattern
from rigbook.launch.plan import LaunchCommand, Target
from rigbook.recipe.schema import Recipe, SglangLaunch


class SglangEngine(NativeEngine):
    kind = "sglang"
    program = "python"
    log_patterns: ClassVar[list[LogPattern]] = [
        LogPattern(
            code="E_ENGINE_MISSING",
            pattern=r"No module named 'sglang'",
            why="SGLang is not installed",
        ),
    ]

    def model_id(self, recipe: Recipe, spec: SglangLaunch) -> str:
        return super().model_id(recipe, spec) or spec.model

    def command(self, recipe: Recipe, spec: SglangLaunch, target: Target) -> LaunchCommand:
        model = self.local_model(recipe, spec, target)
        args = self.args(spec, target)
        if model != spec.model:
            args += ["--served-model-name", self.model_id(recipe, spec)]
        return LaunchCommand(
            argv=[sys.executable, "-m", "sglang.launch_server", "--model-path", model, *args],
            env=self.env(spec, target),
        )

    def missing(self, spec) -> str | None:
        return (
            None
            if importlib.util.find_spec("sglang")
            else f"the sglang package is not installed for {sys.executable}"
        )
