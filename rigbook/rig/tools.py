"""Host programs a recipe may need, with their versions."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

from rigbook.rig.model import HostTool
from rigbook.rig.run import run_cmd

DEFAULT_TOOLS = (
    "bash",
    "python3",
    "git",
    "patch",
    "curl",
    "gzip",
    "flock",
    "docker",
    "nvidia-smi",
    "nvidia-ctk",
    "lspci",
)


def probe_tool(name: str) -> HostTool:
    """Where ``name`` is on PATH and the first line ``name --version`` prints."""
    path = shutil.which(name)
    if path is None:
        return HostTool(name=name, error="not found on PATH")
    result = run_cmd([path, "--version"], timeout_s=5)
    lines = (result.stdout or result.stderr).strip().splitlines()
    if result.error:
        return HostTool(name=name, path=path, error=result.error)
    return HostTool(
        name=name, path=path, version=next((ln.strip() for ln in lines if ln.strip()), None)
    )


def probe_tools(names: tuple[str, ...] | list[str] = DEFAULT_TOOLS) -> list[HostTool]:
    """Every tool in ``names``, probed in parallel (each version call has its own timeout)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(probe_tool, names))
