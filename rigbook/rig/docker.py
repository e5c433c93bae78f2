"""The Docker engine and how it hands NVIDIA GPUs to containers (nvidia runtime or CDI)."""

from __future__ import annotations

import json
from pathlib import Path

from rigbook.rig.model import Docker, ProbeError
from rigbook.rig.run import run_cmd

DEFAULT_CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


def parse_docker_info(text: str) -> Docker:
    """A Docker section from `docker info --format '{{json .}}'` output."""
    info = json.loads(text)
    errors = [
        ProbeError(field="available", query="docker info", error=str(msg))
        for msg in info.get("ServerErrors") or []
    ]
    return Docker(
        available=not errors and bool(info.get("ServerVersion")),
        server_version=info.get("ServerVersion"),
        runtimes=sorted((info.get("Runtimes") or {}).keys()),
        default_runtime=info.get("DefaultRuntime"),
        cdi_spec_dirs=list(info.get("CDISpecDirs") or []),
        errors=errors,
    )


def nvidia_cdi_specs(dirs: list[str] | tuple[str, ...]) -> list[str]:
    """CDI spec files in ``dirs`` that declare NVIDIA GPU devices (kind nvidia.com/gpu)."""
    found = []
    for folder in dirs:
        path = Path(folder)
        if not path.is_dir():
            continue
        for spec in sorted(path.iterdir()):
            if spec.suffix in (".yaml", ".yml", ".json"):
                try:
                    if "nvidia.com/gpu" in spec.read_text(encoding="utf-8", errors="replace"):
                        found.append(str(spec))
                except OSError:
                    continue
    return found


def probe_docker() -> Docker:
    """Ask `docker info` (10 s timeout); a missing or refusing engine is kept with its error."""
    result = run_cmd(["docker", "info", "--format", "{{json .}}"], timeout_s=10)
    if result.ok:
        try:
            docker = parse_docker_info(result.stdout)
        except json.JSONDecodeError as exc:
            docker = Docker(
                errors=[
                    ProbeError(field="available", query="docker info", error=f"not JSON: {exc.msg}")
                ]
            )
    else:
        docker = Docker(
            errors=[
                ProbeError(field="available", query="docker info", error=result.describe_failure())
            ]
        )
    dirs = docker.cdi_spec_dirs or list(DEFAULT_CDI_DIRS)
    docker.cdi_devices = nvidia_cdi_specs(dirs)
    return docker
