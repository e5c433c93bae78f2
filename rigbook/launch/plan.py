"""The plan: the numbered steps a launch takes, as data, so `plan`, `up --dry-run` and `up` share one source."""

from __future__ import annotations

import shlex
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from rigbook.findings import Finding
from rigbook.launch.rules import Danger
from rigbook.recipe.schema import LaunchSpec


class GpuRef(BaseModel):
    """One GPU a launch uses: its NVML index and, when known, its UUID."""

    index: int
    uuid: str | None = None


class Target(BaseModel):
    """Where and how this machine runs the recipe: the values the recipe's placeholders map to."""

    name: str
    gpus: list[GpuRef] = Field(default_factory=list)
    by_uuid: bool = Field(
        default=False, description="The user named GPUs by UUID; map them by UUID too."
    )
    host: str = "127.0.0.1"
    port: int
    models_dir: Path
    work_dir: Path = Field(description="Where a script repository is cloned.")
    drafter: str | None = None
    allow: list[str] = Field(default_factory=list)

    @property
    def slot(self) -> list[str]:
        """The lock keys this launch holds: one per GPU, or the CPU slot."""
        return [f"gpu-{g.uuid or g.index}" for g in self.gpus] or ["cpu"]


class LaunchCommand(BaseModel):
    """A process to start: argv as a list (never a shell string), the env rigbook sets on top of yours, its folder."""

    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    sandbox: list[str] = Field(
        default_factory=list,
        description="The sandbox run in front of argv: bubblewrap and its options, then "
        "`env -i` with the engine's whole environment.",
    )

    @property
    def shown(self) -> str:
        """The command as a person would type it (env first), quoted for display only."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        if self.sandbox:  # the sandbox sets the whole env itself
            return shlex.join([*self.sandbox, *self.argv])
        return (env + " " if env else "") + shlex.join(self.argv)


class Download(BaseModel):
    """Weights to fetch from a Hugging Face-style repository at a pinned revision."""

    repo: str
    revision: str
    dest: Path
    size_bytes: int | None = None
    files: list[str] | None = None


class StepKind(StrEnum):
    check = "check"
    engine = "engine"
    weights = "weights"
    autotune = "autotune"
    start = "start"
    ready = "ready"
    smoke = "smoke"


class Step(BaseModel):
    """One numbered step: what it does, the details a person checks, and what it runs."""

    number: int
    kind: StepKind
    title: str
    details: list[str] = Field(default_factory=list)
    commands: list[LaunchCommand] = Field(
        default_factory=list, description="Processes this step runs, in order."
    )
    downloads: list[Download] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)


class Plan(BaseModel):
    """Everything `up` will do for one recipe on this machine.

    It carries what was resolved from the recipe (the launch spec, its engine kind and the danger
    screen's verdict on this target), so running it derives none of them again.
    """

    recipe: str
    kind: str = Field(description="The engine kind: the launch spec's kind.")
    spec: LaunchSpec = Field(
        description="The launch spec: the recipe's rigbook.launch block, or the one read from its "
        "config.launch."
    )
    dangers: list[Danger] = Field(
        default_factory=list,
        description="The danger screen's verdict on this target: each dangerous construct as "
        "[allow name or null, what]; those not allowed by name stop `up` with E_UNSAFE.",
    )
    target: Target
    url: str
    model_id: str | None
    command: LaunchCommand | None = Field(
        description="The engine process; None for an external endpoint."
    )
    stop_commands: list[LaunchCommand] = Field(
        default_factory=list, description="Run on `down` besides killing the process group."
    )
    steps: list[Step]
    dry_run: bool = False

    @property
    def blocking(self) -> list[Finding]:
        """Error findings of the check step: they stop a launch."""
        return [f for s in self.steps for f in s.findings if f.blocks]
