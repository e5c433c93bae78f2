"""How much free memory per GPU a recipe needs, and where that number came from."""

from __future__ import annotations

import re

from pydantic import BaseModel

from rigbook.recipe.schema import Recipe

_UTIL_FLAGS = ("--gpu-memory-utilization", "--mem-fraction-static")
_UTIL_ENV = ("GPU_MEMORY_UTILIZATION", "VLLM_GPU_MEMORY_UTILIZATION", "MEM_FRACTION_STATIC")


class MemoryNeed(BaseModel):
    """Free MiB per GPU: a fixed number (``mib``) or a fraction of each card's total."""

    mib: int | None = None
    fraction: float | None = None
    source: str

    def for_total(self, total_mib: int | None, vram_gb: float | None) -> int | None:
        """The need on a card with ``total_mib`` (the recipe's vram_gb where the total is unknown)."""
        if self.mib is not None:
            return self.mib
        base = total_mib if total_mib is not None else (vram_gb * 1024 if vram_gb else None)
        return None if base is None or self.fraction is None else int(self.fraction * base + 0.5)


def _utilization(recipe: Recipe) -> tuple[float, str] | None:
    launch = recipe.ext.launch
    argv = list(recipe.config.launch) + list(getattr(launch, "args", []) or [])
    for i, token in enumerate(argv):
        for flag in _UTIL_FLAGS:
            if token == flag and i + 1 < len(argv):
                return float(argv[i + 1]), f"{flag} {argv[i + 1]}"
            if token.startswith(flag + "="):
                return float(token.split("=", 1)[1]), token
        match = re.fullmatch(r"(" + "|".join(_UTIL_ENV) + r")=([0-9.]+)", token)
        if match:
            return float(match.group(2)), token
    env = getattr(launch, "env", None) or {}
    for key in _UTIL_ENV:
        if key in env:
            return float(env[key]), f"{key}={env[key]}"
    return None


def memory_need(recipe: Recipe) -> MemoryNeed | None:
    """The recipe's ``min_free_mib_per_gpu``, else its GPU memory utilisation (argv or env), else None."""
    if recipe.ext.min_free_mib_per_gpu is not None:
        return MemoryNeed(
            mib=recipe.ext.min_free_mib_per_gpu, source="rigbook.min_free_mib_per_gpu"
        )
    try:
        found = _utilization(recipe)
    except ValueError:
        return None
    if found is None:
        return None
    fraction, source = found
    return MemoryNeed(fraction=fraction, source=source)
