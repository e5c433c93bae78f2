"""The one interface every engine adapter implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from rigbook.launch.logscan import LogPattern
from rigbook.launch.plan import LaunchCommand, Step, StepKind, Target
from rigbook.launch.rules import Danger
from rigbook.launch.safety import spec_dangers
from rigbook.openai.urls import MODELS_PATH
from rigbook.recipe.schema import Recipe


class Engine(ABC):
    """An engine kind: how to fetch it, the exact process to start, where it answers, what its log says."""

    kind: ClassVar[str]
    #: False for an endpoint that already runs: nothing is started, locked or stopped.
    starts_process: ClassVar[bool] = True
    #: Engine-specific log lines, tried before the common ones.
    log_patterns: ClassVar[list[LogPattern]] = []
    #: Paths that must answer 200, in this order, before the engine counts as ready.
    ready_paths: ClassVar[tuple[str, ...]] = (MODELS_PATH,)

    @abstractmethod
    def fetch_steps(self, recipe: Recipe, spec, target: Target) -> list[Step]:
        """Steps that get the engine onto this machine (numbers are filled in by the planner)."""

    @abstractmethod
    def command(self, recipe: Recipe, spec, target: Target) -> LaunchCommand | None:
        """The engine process, with every placeholder mapped to ``target``."""

    def url(self, spec, target: Target) -> str:
        """The base URL the engine answers at."""
        return f"http://{target.host}:{target.port}"

    def model_id(self, recipe: Recipe, spec) -> str | None:
        """The model id the engine serves (None: take the first it lists)."""
        return recipe.ext.serve.model_id if recipe.ext.serve else None

    def dangers(self, recipe: Recipe, spec, target: Target) -> list[Danger]:
        """What the launch asks for that the safety rules refuse (env, rigbook's options, paths …)."""
        return spec_dangers(self.kind, spec, target)

    def notes(self, recipe: Recipe, spec, target: Target) -> list[str]:
        """What rigbook mapped or replaced in the recipe's command, for the plan to show."""
        return []

    def stop_commands(self, spec, target: Target) -> list[LaunchCommand]:
        """Extra commands `down` runs (e.g. `docker stop`), besides killing the process group."""
        return []

    def served_version(self, url: str) -> str | None:
        """The engine's version as its running server reports it (None: it does not say)."""
        return None

    def missing(self, spec) -> str | None:
        """What is not installed for this engine to run here, or None (checked by `up`, not by a dry run)."""
        return None


def step(
    kind: StepKind,
    title: str,
    details: list[str] | None = None,
    commands: list[LaunchCommand] | None = None,
) -> Step:
    """A step; the planner numbers it."""
    return Step(number=0, kind=kind, title=title, details=details or [], commands=commands or [])
