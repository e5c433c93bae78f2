"""Refuse dangerous options a recipe asks for, unless the user allows each one by name.

Recipes come from strangers and become processes here. The container options
that give a container the host (``--privileged``, host namespaces, capabilities,
devices other than GPUs, device cgroup rules, another container's volumes,
unconfined security profiles or labels, the docker API socket, bind mounts of
``/``, the home directory or system directories) are refused with E_UNSAFE
naming the option; ``--allow NAME`` lets one through. Options are read the way
docker reads them (:mod:`rigbook.launch.docker_args`), and a relative bind
source is resolved against the folder docker runs in before it is checked.
Native engines are checked for ``--trust-remote-code``, which runs Python code
from the model repository.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from rigbook.errors import LaunchError
from rigbook.launch.docker_args import parse_options

# Namespaces the docker kind may share with the host without asking. `--ipc host`:
# tensor-parallel engines pass tensors between worker processes through shared
# memory, and the vLLM and SGLang images document `--ipc=host` for it.
DOCKER_KIND_NEEDS = {"ipc-host"}

HOST_NAMESPACES = {"--pid": "pid-host", "--ipc": "ipc-host", "--network": "network-host", "--uts": "uts-host",
                   "--userns": "userns-host", "--cgroupns": "cgroupns-host"}

# Refused together with everything under them (/run and /var hold the docker socket).
SYSTEM_DIRS = ["/etc", "/usr", "/var", "/proc", "/sys", "/dev", "/root", "/boot", "/bin", "/sbin", "/lib",
               "/lib64", "/run", "/snap"]
# Refused as a whole; a folder inside them (your own models folder) is fine.
WHOLE_DIRS = ["/home", "/opt", "/srv", "/mnt", "/media", "/tmp"]

GPU_DEVICE_PREFIXES = ("/dev/nvidia", "nvidia.com/gpu")
# `--security-opt` values that switch a confinement off (docker accepts `=` or the old `:`).
UNCONFINED = ("seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined", "label=disable",
              "no-new-privileges=false")


def _protected(path: str) -> str | None:
    """Why mounting ``path`` (absolute, normalised) from the host is dangerous, or None."""
    resolved = path
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


def _mount_fields(value: str) -> dict[str, list[str]]:
    """A ``--mount`` value read as docker reads it: CSV fields (quotes allowed), keys and types in any case."""
    fields: dict[str, list[str]] = {}
    for row in csv.reader([value]):
        for part in row:
            key, _, val = part.partition("=")
            fields.setdefault(key.strip().lower(), []).append(val.strip())
    return fields


def _bind_source(option: str, value: str) -> str | None:
    """The host path a --volume/--mount value binds, as written; None for a named or anonymous volume, or tmpfs."""
    if option == "--mount":
        fields = _mount_fields(value)
        kind = (fields.get("type") or ["volume"])[-1].lower()
        if kind == "bind":
            return (fields.get("source") or fields.get("src") or [None])[-1]
        # The local volume driver binds a host path too: volume-opt=o=bind,volume-opt=device=/PATH.
        options = dict(opt.partition("=")[::2] for opt in fields.get("volume-opt", []))
        if kind == "volume" and "device" in options:
            return options["device"] or "/"
        return None
    if ":" not in value:
        return None  # `-v /data`: an anonymous volume at /data inside the container
    source = value.split(":", 1)[0]
    # Volume names start with a letter or digit; docker reads anything else as a host path.
    return source if source.startswith(("/", "~", ".")) else None


def _resolve(source: str, cwd: str) -> str:
    """``source`` as docker binds it: ``~`` expanded, relative to ``cwd``, normalised (``//etc`` is ``/etc``)."""
    path = os.path.normpath(os.path.join(cwd, os.path.expanduser(source)))
    return "/" + path.lstrip("/")


def _gpu_device(value: str) -> bool:
    """A GPU device node or CDI name; a path is normalised first (``/dev/nvidia-caps/../sda`` is no GPU)."""
    host = value.split(":", 1)[0]
    if host.startswith("/"):
        host = "/" + os.path.normpath(host).lstrip("/")
    return host.startswith(GPU_DEVICE_PREFIXES)


def _unconfined(value: str) -> bool:
    normal = value.replace(":", "=", 1).replace(" ", "").lower()
    return "unconfined" in normal or normal.startswith(UNCONFINED)


def docker_dangers(args: list[str], *, needs: set[str] | None = None, cwd: str | None = None) -> list[tuple[str, str]]:
    """(allow name, what it does) for each dangerous option in ``docker run`` options ``args``.

    ``cwd`` is the folder docker runs in (default: this process's), against which relative bind sources resolve.
    """
    needs = DOCKER_KIND_NEEDS if needs is None else needs
    cwd = cwd or os.getcwd()
    found: list[tuple[str, str]] = []
    options, _ = parse_options(args)
    for o in options:
        name, value, shown = o.name, o.value, o.shown
        if name == "--privileged" and (value is None or value.lower() != "false"):
            found.append(("privileged", f"{shown} gives the container every device and capability of the host"))
        elif name == "--use-api-socket" and (value is None or value.lower() != "false"):
            found.append(("use-api-socket", f"{shown} gives the container the docker API, and with it the host"))
        elif name in HOST_NAMESPACES and value == "host":
            allow = HOST_NAMESPACES[name]
            if allow not in needs:
                found.append((allow, f"{shown} shares the host's {name.lstrip('-')} namespace with the container"))
        elif name == "--cap-add" and value:
            found.append(("cap-add", f"{shown} grants the container the kernel capability {value}"))
        elif name == "--device" and value and not _gpu_device(value):
            found.append(("device", f"{shown} passes a host device other than a GPU into the container"))
        elif name == "--device-cgroup-rule" and value:
            found.append(("device-cgroup-rule", f"{shown} lets the container open host devices it creates"))
        elif name == "--volumes-from" and value:
            found.append(("volumes-from", f"{shown} mounts another container's volumes, host folders included"))
        elif name in ("--env-file", "--label-file") and value:
            # The file is read on the host: a recipe naming ~/.aws/credentials hands its secrets to the image.
            found.append(("env-file", f"{shown} reads a host file into the container's environment"))
        elif name == "--security-opt" and value and _unconfined(value):
            found.append(("security-opt", f"{shown} turns off a container security profile"))
        elif name in ("--volume", "--mount") and value:
            source = _bind_source(name, value)
            why = _protected(_resolve(source, cwd)) if source else None
            if why:
                found.append(("bind-mount", f"{shown} mounts {why} into the container"))
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
