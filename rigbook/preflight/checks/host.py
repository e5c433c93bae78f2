"""Host checks: Docker and the NVIDIA Container Toolkit, host tools, disk space, the port."""

from __future__ import annotations

from pathlib import Path

from rigbook.findings import Finding
from rigbook.paths import inside
from rigbook.ports import bind_error
from rigbook.preflight.context import CheckContext
from rigbook.recipe.hf import artifact_repo
from rigbook.rig.disk import probe_disk
from rigbook.rig.docker import DEFAULT_CDI_DIRS
from rigbook.rig.tools import probe_tool

_GB = 1e9


def check_docker(ctx: CheckContext) -> list[Finding]:
    """E_DOCKER when the recipe runs in Docker and no engine answers; E_TOOLKIT when it cannot hand out NVIDIA GPUs."""
    docker = ctx.rig.docker
    findings = []
    if ctx.uses_docker and not docker.available:
        why = "; ".join(e.error for e in docker.errors) or "docker info gave no server version"
        # A daemon that runs but refuses this user has another remedy than one that is not there.
        code = "E_DOCKER_DENIED" if "permission denied" in why else "E_DOCKER"
        findings.append(
            Finding.make(code, f"the recipe runs in Docker; no working Docker engine: {why}")
        )
    if ctx.needs_toolkit and not docker.nvidia_ready:
        dirs = ", ".join(docker.cdi_spec_dirs or DEFAULT_CDI_DIRS)
        runtimes = (
            f"Docker runtimes: {', '.join(docker.runtimes) or 'none'}"
            if docker.available
            else "Docker did not answer, so its runtimes are unknown"
        )
        findings.append(
            Finding.make(
                "E_TOOLKIT",
                f"no nvidia runtime ({runtimes}) and no CDI spec naming nvidia.com/gpu in {dirs}",
            )
        )
    return findings


def check_tools(ctx: CheckContext) -> list[Finding]:
    """E_TOOL for each of ``rigbook.host_tools`` that is not on PATH."""
    findings = []
    for name in ctx.recipe.ext.host_tools:
        tool = ctx.rig.tool(name)
        if tool is None and ctx.rig.live:
            tool = probe_tool(name)
        if tool is None:
            findings.append(
                Finding.make(
                    "E_TOOL",
                    f"{name}: the recipe needs it and this rig's document does not list it",
                )
            )
        elif not tool.found:
            findings.append(
                Finding.make("E_TOOL", f"{name}: the recipe needs it; {tool.error or 'not found'}")
            )
    return findings


def _present_bytes(models_dir: Path, repo: str | None, pin: str | None) -> int:
    """Bytes already downloaded for one artifact (MODELS_DIR/org/name/revision, as `rigbook up` stores them)."""
    if repo is None or pin is None:
        return 0
    folder = models_dir / repo / pin
    # The walk stays in the models folder: a symlinked org or revision folder is not followed out of it.
    if not folder.is_dir() or not inside(models_dir, folder):
        return 0
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def check_disk(ctx: CheckContext) -> list[Finding]:
    """E_DISK when the weights still to download are larger than the free space in the models dir:
    this machine's ``models_dir`` for a live rig, the saved document's reading for a saved one."""
    sized = [a for a in ctx.recipe.artifacts if a.size_bytes]
    if not sized:
        return []
    disk = ctx.rig.models_disk
    if ctx.rig.live and ctx.models_dir is not None:
        disk = probe_disk(ctx.models_dir)
    if disk is None or disk.free_bytes is None:
        return []
    need = sum(a.size_bytes or 0 for a in sized)
    if ctx.rig.live:
        need -= sum(_present_bytes(Path(disk.path), artifact_repo(a), a.pin) for a in sized)
    if need <= disk.free_bytes:
        return []
    # A saved rig is judged by its own reading of its models folder, on the machine it describes:
    # the message says so, since that folder is not this machine's.
    machine = ctx.rig.host.hostname or "its machine"
    where = "" if ctx.rig.live else f" (the saved rig's reading on {machine}, not this machine)"
    return [
        Finding.make(
            "E_DISK",
            f"weights need {need / _GB:.1f} GB; {disk.path} has {disk.free_bytes / _GB:.1f} GB free{where}",
        )
    ]


def port_taken(port: int) -> bool:
    """Something already listens on (or holds) TCP ``port`` on this machine."""
    return bind_error("0.0.0.0", port) is not None


def check_port(ctx: CheckContext) -> list[Finding]:
    """E_PORT when the port the engine would listen on is taken (this machine only, not a saved rig)."""
    serve = ctx.recipe.ext.serve
    port = ctx.port or (serve.port if serve else None)
    if port is None or not ctx.rig.live or not port_taken(port):
        return []
    return [Finding.make("E_PORT", f"port {port} is already in use on this machine")]
