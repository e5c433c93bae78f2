"""What every check reads: the recipe, the rig, the GPUs picked for it, and the options."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rigbook.recipe.schema import Recipe
from rigbook.rig.model import Gpu, Rig


class CheckContext(BaseModel):
    """One check run. ``gpus`` are the rig's GPUs the recipe would use."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    recipe: Recipe
    rig: Rig
    gpus: list[Gpu]
    port: int | None = None
    models_dir: Path | None = None

    @property
    def indices(self) -> list[int]:
        """NVML indices of the picked GPUs."""
        return [g.index for g in self.gpus]

    def _requires(self, *words: str) -> bool:
        """A line of ``requirements.requires`` names one of ``words`` (the public record's only host facts)."""
        lines = [
            line.lower()
            for line in (self.recipe.requirements.requires if self.recipe.requirements else [])
        ]
        return any(w in line for line in lines for w in words)

    @property
    def uses_docker(self) -> bool:
        """The recipe runs in Docker: it says so, launches a docker kind, or its argv or requirements start Docker."""
        ext = self.recipe.ext
        if ext.needs_docker is not None:
            return ext.needs_docker
        argv = self.recipe.config.launch
        return (
            (ext.launch is not None and ext.launch.kind == "docker")
            or (bool(argv) and argv[0] == "docker")
            or self._requires("docker")
        )

    @property
    def needs_toolkit(self) -> bool:
        """The container needs NVIDIA GPUs: the recipe says so, or it is a Docker recipe on GPUs."""
        ext = self.recipe.ext
        if ext.needs_container_toolkit is not None:
            return ext.needs_container_toolkit
        return self._requires("nvidia container toolkit", "nvidia-container-toolkit") or (
            self.uses_docker and self.recipe.gpu_count > 0
        )

    @property
    def needs_p2p(self) -> bool:
        """Peer access is needed: the recipe says so, or (unsaid) it runs on two or more GPUs of one host."""
        needs = self.recipe.ext.needs_p2p
        return needs if needs is not None else self.recipe.gpu_count >= 2

    @property
    def tp_pairs(self) -> list[tuple[int, int]]:
        """Every pair of picked GPUs, for a multi-GPU recipe (they run tensor-parallel)."""
        if self.recipe.gpu_count < 2:
            return []
        return list(combinations(self.indices, 2))


def gpu_list(indices: list[int]) -> str:
    """'GPU 0' or 'GPUs 0, 1'."""
    return ("GPU " if len(indices) == 1 else "GPUs ") + ", ".join(str(i) for i in indices)
