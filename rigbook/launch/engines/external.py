"""An endpoint that already runs: rigbook starts, locks and stops nothing; it only waits and smoke-tests."""

from __future__ import annotations

from rigbook.launch.engines.base import Engine, step
from rigbook.launch.plan import StepKind, Target
from rigbook.openai.urls import base_url
from rigbook.recipe.schema import ExternalLaunch, Recipe


class ExternalEngine(Engine):
    kind = "external"
    starts_process = False

    def url(self, spec: ExternalLaunch, target: Target) -> str:
        return base_url(spec.url)

    def fetch_steps(self, recipe: Recipe, spec: ExternalLaunch, target: Target):
        return [
            step(
                StepKind.engine,
                "engine: an endpoint that already runs",
                [f"{spec.url} (nothing is started)"],
            )
        ]

    def command(self, recipe: Recipe, spec: ExternalLaunch, target: Target) -> None:
        return None

    def dangers(self, recipe: Recipe, spec: ExternalLaunch, target: Target) -> list:
        return []  # nothing runs here; the URL's scheme is checked at validation
