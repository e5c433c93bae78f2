"""Refuse dangerous options a recipe asks for, unless the user allows each one by name.

Recipes come from strangers and become processes here. The container options
that give a container the host (``--privileged``, host namespaces, capabilities,
devices other than GPUs, unconfined security profiles, bind mounts of ``/``, the
home directory or system directories) are refused with E_UNSAFE naming the
option; ``--allow NAME`` lets one through. Native engines are checked for
``--trust-remote-code``, which runs Python code from the model repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from rigbook.errors import LaunchError

# Namespaces the docker kind may share with the host without asking. `--ipc host`:
# tensor-parallel engines pass tensors between worker processes through shared
# memory, and the vLLM and SGLang images document `--ipc=host` for it.
DOCKER_KIND_NEEDS = {"ipc-host"}

HOST_NAMESPACES = {"--pid": "pid-host", "--ipc": "ipc-host", "--network": "network-host", "--net": "network-host",
                   "--uts": "uts-host", "--userns": "userns-host", "--cgroupns": "cgroupns-host"}

# Refused together with everything under them (/run and /var hold the docker socket).
SYSTEM_DIRS = ["/etc", "/usr", "/var", "/proc", "/sys", "/dev", "/root", "/boot", "/bin", "/sbin", "/lib",
               "/lib64", "/run", "/snap"]
# Refused as a whole; a folder inside them (your own models folder) is fine.
WHOLE_DIRS = ["/home", "/opt", "/srv", "/mnt", "/media", "/tmp"]

# Docker options that take a value as the next argv item (when not given as --opt=value).
DOCKER_VALUE_OPTIONS = {
    "-v", "--volume", "--mount", "-e", "--env", "--env-file", "-p", "--publish", "--name", "--gpus", "--device",
    "--cap-add", "--cap-drop", "--security-opt", "-u", "--user", "-w", "--workdir", "--entrypoint", "--shm-size",
    "--ulimit", "--runtime", "-l", "--label", "--restart", "--memory", "-m", "--cpus", "--cpuset-cpus",
    "--add-host", "--hostname", "-h", "--log-driver", "--log-opt", "--platform", "--pull", "--stop-signal",
    "--stop-timeout", "--tmpfs", "--volumes-from", "--group-add", "--sysctl", "--device-cgroup-rule",
    *HOST_NAMESPACES,
}

GPU_DEVICE_PREFIXES = ("/dev/nvidia", "nvidia.com/gpu")


def split_option(args: list[str], i: int) -> tuple[str, str | None, int]:
    """The option at ``args[i]``, its value (from ``--opt=v`` or the next item) and the index after it."""
    item = args[i]
    if item.startswith("--") and "=" in item:
        name, value = item.split("=", 1)
        return name, value, i + 1
    if item in DOCKER_VALUE_OPTIONS:
        return item, (args[i + 1] if i + 1 < len(args) else None), i + 2
    if item.startswith("-v") and len(item) > 2 and not item.startswith("--"):
        return "-v", item[2:], i + 1
    return item, None, i + 1


def _protected(path: str) -> str | None:
    """Why mounting ``path`` from the host is dangerous, or None."""
    resolved = os.path.normpath(os.path.expanduser(path))
    home = os.path.normpath(str(Path.home()))
    if resolved == "/":
        return "the whole host filesystem"
    if resolved == home or home.startswith(resolved.rstrip("/") + "/"):
        return f"your home directory ({home})"
    if resolved.startswith(home + "/"):
        inside = resolved[len(home) + 1:]
        # ~/models is yours to share; ~/.ssh, ~/.aws, ~/.config hold credentials.
        return f"the hidden folder ~/{inside.split('/')[0]}" if inside.startswith(".") else None
    if resolved.startswith("/home/"):
        return "another user's home directory"
    for system in SYSTEM_DIRS:
        if resolved == system or resolved.startswith(system + "/") or system.startswith(resolved + "/"):
            return f"the system directory {system}"
    for whole in WHOLE_DIRS:
        if resolved == whole or whole.startswith(resolved + "/"):
            return f"the directory {whole} as a whole"
    return None


def _bind_source(option: str, value: str) -> str | None:
    """The host path a -v/--mount value binds, or None for a named volume or tmpfs."""
    if option == "--mount":
        fields = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
        if fields.get("type", "volume") != "bind":
            return None
        return fields.get("source") or fields.get("src")
    source = value.split(":", 1)[0]
    return source if source.startswith(("/", "~", ".")) else None


def docker_dangers(args: list[str], *, needs: set[str] | None = None) -> list[tuple[str, str]]:
    """(allow name, what it does) for each dangerous option in ``docker run`` options ``args``."""
    needs = DOCKER_KIND_NEEDS if needs is None else needs
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        option, value, i = split_option(args, i)
        if option == "--privileged" and (value is None or value.lower() != "false"):
            found.append(("privileged", "--privileged gives the container every device and capability of the host"))
        elif option in HOST_NAMESPACES and value == "host":
            name = HOST_NAMESPACES[option]
            if name not in needs:
                found.append((name, f"{option} host shares the host's {option.lstrip('-')} namespace with the container"))
        elif option == "--cap-add" and value:
            found.append(("cap-add", f"--cap-add {value} grants the container the kernel capability {value}"))
        elif option == "--device" and value and not value.startswith(GPU_DEVICE_PREFIXES):
            found.append(("device", f"--device {value} passes a host device other than a GPU into the container"))
        elif option == "--security-opt" and value and ("unconfined" in value or value.startswith("no-new-privileges=false")):
            found.append(("security-opt", f"--security-opt {value} turns off a container security profile"))
        elif option in ("-v", "--volume", "--mount") and value:
            source = _bind_source(option, value)
            why = _protected(source) if source else None
            if why:
                found.append(("bind-mount", f"{option} {value} mounts {why} into the container"))
    return found


def native_dangers(args: list[str]) -> list[tuple[str, str]]:
    """(allow name, what it does) for dangerous options of a native engine's argv."""
    if any(a == "--trust-remote-code" or a.startswith("--trust-remote-code=") for a in args):
        return [("trust-remote-code", "--trust-remote-code runs Python code shipped in the model repository")]
    return []


def refuse_unless_allowed(dangers: list[tuple[str, str]], allowed: set[str]) -> None:
    """Raise E_UNSAFE naming every dangerous option the user has not allowed by name."""
    refused = [(name, what) for name, what in dangers if name not in allowed]
    if refused:
        names = sorted({name for name, _ in refused})
        raise LaunchError(
            "E_UNSAFE", f"the recipe asks for {len(refused)} dangerous option(s): {', '.join(names)}",
            remedy="Read each option; if you trust it, allow it by name: " + " ".join(f"--allow {n}" for n in names),
            details=[f"{what} (allow with --allow {name})" for name, what in refused],
        )
