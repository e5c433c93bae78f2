"""The host: OS, kernel, CPU, RAM, and whether this runs inside a container."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

from rigbook.rig.model import Host, ProbeError

_CONTAINER_CGROUP_WORDS = ("docker", "kubepods", "containerd", "libpod", "lxc")


def read_text(path: Path | str) -> str:
    """A small system file's text (raises OSError)."""
    return Path(path).read_text(encoding="utf-8", errors="replace")


def os_name(os_release: str | None) -> str:
    """PRETTY_NAME from /etc/os-release text, else the platform's system name."""
    for line in (os_release or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return platform.system()


def cpu_model(cpuinfo: str) -> str | None:
    """The CPU model name from /proc/cpuinfo text."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware") and value.strip():
            return value.strip()
    return None


def meminfo_mib(meminfo: str, key: str) -> int | None:
    """A /proc/meminfo value (kB) in MiB."""
    for line in meminfo.splitlines():
        name, _, value = line.partition(":")
        if name == key:
            return int(value.split()[0]) // 1024
    return None


def container_hint(root: Path = Path("/")) -> str | None:
    """What shows that this process runs in a container, or None."""
    for marker in (".dockerenv", "run/.containerenv"):
        if (root / marker).exists():
            return f"/{marker} exists"
    try:
        cgroup = read_text(root / "proc/1/cgroup")
    except OSError:
        cgroup = ""
    for word in _CONTAINER_CGROUP_WORDS:
        if word in cgroup:
            return f"/proc/1/cgroup mentions {word}"
    # systemd and podman set the lower-case variable.
    if os.environ.get("container"):  # noqa: SIM112
        return f"$container={os.environ['container']}"  # noqa: SIM112
    return None


def probe_host() -> Host:
    """Read the host facts; a file that cannot be read is kept as an error."""
    errors: list[ProbeError] = []

    def text(field: str, path: str) -> str | None:
        try:
            return read_text(path)
        except OSError as exc:
            errors.append(
                ProbeError(field=field, query=f"read {path}", error=exc.strerror or str(exc))
            )
            return None

    os_release = text("os", "/etc/os-release")
    cpuinfo = text("cpu_model", "/proc/cpuinfo")
    meminfo = text("ram_total_mib", "/proc/meminfo")
    hint = container_hint()
    return Host(
        hostname=socket.gethostname(),
        os=os_name(os_release),
        kernel=platform.release(),
        arch=platform.machine(),
        cpu_model=cpu_model(cpuinfo) if cpuinfo else None,
        cpu_count=os.cpu_count(),
        ram_total_mib=meminfo_mib(meminfo, "MemTotal") if meminfo else None,
        ram_available_mib=meminfo_mib(meminfo, "MemAvailable") if meminfo else None,
        python=platform.python_version(),
        in_container=hint is not None,
        container_hint=hint,
        errors=errors,
    )
