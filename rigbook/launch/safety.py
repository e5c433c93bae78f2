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

from rigbook.errors import InputError, LaunchError
from rigbook.home import rigbook_home
from rigbook.launch.docker_args import parse_options
from rigbook.launch.placeholders import substitute
from rigbook.launch.plan import Target
from rigbook.launch.rules import Danger
from rigbook.launch.rules.env import ENV_NAME_RE, env_dangers, never
from rigbook.launch.rules.options import option_dangers
from rigbook.launch.rules.paths import path_danger

# Namespaces the docker kind may share with the host without asking. `--ipc host`:
# tensor-parallel engines pass tensors between worker processes through shared
# memory, and the vLLM and SGLang images document `--ipc=host` for it.
DOCKER_KIND_NEEDS = {"ipc-host"}

HOST_NAMESPACES = {
    "--pid": "pid-host",
    "--ipc": "ipc-host",
    "--network": "network-host",
    "--uts": "uts-host",
    "--userns": "userns-host",
    "--cgroupns": "cgroupns-host",
}

# Refused together with everything under them (/run and /var hold the docker socket).
SYSTEM_DIRS = [
    "/etc",
    "/usr",
    "/var",
    "/proc",
    "/sys",
    "/dev",
    "/root",
    "/boot",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/run",
    "/snap",
]
# Refused as a whole; a folder inside them (your own models folder) is fine.
WHOLE_DIRS = ["/home", "/opt", "/srv", "/mnt", "/media", "/tmp"]

# Device nodes every CUDA process needs, whichever GPUs it uses; /dev/nvidiaN is one GPU.
GPU_SHARED_NODES = (
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
    "/dev/nvidia-caps/",
)
# The only `--security-opt` values that add confinement; every other one loosens or replaces a
# profile.
CONFINING = {"no-new-privileges", "no-new-privileges=true"}
# Options whose value `container:NAME` joins another container's namespace.
JOINS = {"--pid", "--ipc", "--network", "--uts", "--userns", "--cgroupns"}

#: Every name `--allow` takes (besides env:NAME).
ALLOW_NAMES = {
    "privileged",
    "use-api-socket",
    "pid-host",
    "ipc-host",
    "network-host",
    "uts-host",
    "userns-host",
    "cgroupns-host",
    "cap-add",
    "device",
    "device-cgroup-rule",
    "volumes-from",
    "env-file",
    "security-opt",
    "bind-mount",
    "cgroup-parent",
    "join-container",
    "trust-remote-code",
    "shell",
    "no-sandbox",
}


def _protected(path: str, roots: list[Path] | None = None) -> str | None:
    """Why mounting ``path`` (absolute, symlinks resolved) from the host is dangerous, or None.

    A folder inside ``roots`` (the models folder rigbook fetches into) is rigbook's own.
    """
    resolved = path
    if any(
        resolved == os.path.realpath(r)
        or resolved.startswith(os.path.realpath(r).rstrip("/") + "/")
        for r in roots or []
    ):
        return None
    home = os.path.normpath(str(Path.home()))
    if resolved == "/":
        return "the whole host filesystem"
    if resolved == home or home.startswith(resolved.rstrip("/") + "/"):
        return f"your home directory ({home})"
    if resolved.startswith(home + "/"):
        inside = resolved[len(home) + 1 :]
        # ~/models is yours to share; ~/.ssh, ~/.aws, ~/.config hold credentials.
        return f"the hidden folder ~/{inside.split('/')[0]}" if inside.startswith(".") else None
    if resolved.startswith("/home/"):
        return "another user's home directory"
    for system in SYSTEM_DIRS:
        if (
            resolved == system
            or resolved.startswith(system + "/")
            or system.startswith(resolved + "/")
        ):
            return f"the system directory {system}"
    for whole in WHOLE_DIRS:
        if resolved == whole or whole.startswith(resolved + "/"):
            return f"the directory {whole} as a whole"
    return None


def _mount_fields(value: str) -> dict[str, list[str]]:
    """A ``--mount`` value read as docker reads it: CSV fields (quotes allowed), keys and types
    in any case."""
    fields: dict[str, list[str]] = {}
    for row in csv.reader([value]):
        for part in row:
            key, _, val = part.partition("=")
            fields.setdefault(key.strip().lower(), []).append(val.strip())
    return fields


def _bind_source(option: str, value: str) -> str | None:
    """The host path a --volume/--mount value binds, as written; None for a named or anonymous
    volume, or tmpfs."""
    if option == "--mount":
        fields = _mount_fields(value)
        kind = (fields.get("type") or ["volume"])[-1].lower()
        if kind == "bind":
            sources = fields.get("source") or fields.get("src")
            return sources[-1] if sources else None
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
    """``source`` as docker binds it: ``~`` expanded, relative to ``cwd``, ``//etc`` as ``/etc``,
    symlinks resolved.

    Docker follows a symlinked source, so a link to ``/`` mounts ``/``.
    """
    path = os.path.normpath(os.path.join(cwd, os.path.expanduser(source)))
    return os.path.realpath("/" + path.lstrip("/"))


def _gpu_device(value: str, gpus: set[str] | None) -> bool:
    """A node every GPU process needs, or the node/CDI name of a GPU this launch uses (``gpus``:
    indices, UUIDs).

    A path is normalised and resolved first (``/dev/nvidia-caps/../sda`` is no GPU); ``gpus``
    None: any GPU.
    """
    host = value.split(":", 1)[0]
    if host.startswith("nvidia.com/gpu="):
        wanted = host.split("=", 1)[1]
        return gpus is None or wanted in gpus
    if not host.startswith("/"):
        return False
    host = os.path.realpath("/" + os.path.normpath(host).lstrip("/"))
    if host.startswith(GPU_SHARED_NODES):
        return True
    number = host.removeprefix("/dev/nvidia")
    return (
        host.startswith("/dev/nvidia")
        and number.isascii()
        and number.isdigit()
        and (gpus is None or str(int(number)) in gpus)
    )


def _unconfined(value: str) -> bool:
    return value.replace(":", "=", 1).replace(" ", "").lower() not in CONFINING


def _env_option(shown: str, value: str) -> list[Danger]:
    """A recipe's ``-e NAME=VALUE`` (the container's knob) or ``-e NAME`` (copies this host's
    value in)."""
    name, has_value, val = value.partition("=")
    if not ENV_NAME_RE.fullmatch(name):
        return [Danger(None, f"{shown}: {name[:40]!r} is not a variable name")]
    if has_value:
        return env_dangers({name: val}, roots=[], container=True)
    if never(name):
        return env_dangers({name: ""}, roots=[], container=True)
    return [
        Danger(
            f"env:{name}", f"{shown} copies this host's {name} (a token, a path) into the container"
        )
    ]


def docker_dangers(
    args: list[str],
    *,
    needs: set[str] | None = None,
    cwd: str | None = None,
    gpus: set[str] | None = None,
    roots: list[Path] | None = None,
) -> list[Danger]:
    """The dangerous options in ``docker run`` options ``args``.

    ``cwd`` is the folder docker runs in (default: this process's), against which relative bind
    sources resolve; ``gpus`` the GPUs (indices and UUIDs) this launch may pass in (None: any);
    ``roots`` folders that are
    rigbook's own to mount (the models folder).
    """
    needs = DOCKER_KIND_NEEDS if needs is None else needs
    cwd = cwd or os.getcwd()
    found: list[Danger] = []
    options, _ = parse_options(args)
    for o in options:
        name, value, shown = o.name, o.value, o.shown
        if name == "--privileged" and (value is None or value.lower() != "false"):
            found.append(
                Danger(
                    "privileged",
                    f"{shown} gives the container every device and capability of the host",
                )
            )
        elif name == "--use-api-socket" and (value is None or value.lower() != "false"):
            found.append(
                Danger(
                    "use-api-socket",
                    f"{shown} gives the container the docker API, and with it the host",
                )
            )
        elif name in JOINS and value and value.lower().startswith("container:"):
            found.append(
                Danger(
                    "join-container",
                    f"{shown} joins another container's {name.lstrip('-')} namespace",
                )
            )
        elif name == "--cgroup-parent" and value is not None:
            found.append(
                Danger(
                    "cgroup-parent",
                    f"{shown} places the container in a host cgroup of the recipe's "
                    "choosing (the root cgroup escapes its limits)",
                )
            )
        elif name == "--env" and value is not None:
            found += _env_option(shown, value)
        elif name == "":
            found.append(
                Danger(
                    None,
                    f"{value!r} is not an option: docker would read it as the image, and "
                    "what follows as the container's command",
                )
            )
        elif name in HOST_NAMESPACES and value == "host":
            allow = HOST_NAMESPACES[name]
            if allow not in needs:
                found.append(
                    Danger(
                        allow,
                        f"{shown} shares the host's {name.lstrip('-')} namespace with the "
                        "container",
                    )
                )
        elif name == "--cap-add" and value:
            found.append(
                Danger("cap-add", f"{shown} grants the container the kernel capability {value}")
            )
        elif name == "--device" and value and not _gpu_device(value, gpus):
            found.append(
                Danger(
                    "device",
                    f"{shown} passes a host device other than the GPUs of this launch "
                    "(a GPU outside --gpus bypasses that GPU's lock)",
                )
            )
        elif name == "--device-cgroup-rule" and value:
            found.append(
                Danger(
                    "device-cgroup-rule", f"{shown} lets the container open host devices it creates"
                )
            )
        elif name == "--volumes-from" and value:
            found.append(
                Danger(
                    "volumes-from",
                    f"{shown} mounts another container's volumes, host folders included",
                )
            )
        elif name in ("--env-file", "--label-file") and value:
            # The file is read on the host: a recipe naming ~/.aws/credentials hands its secrets to
            # the image.
            found.append(
                Danger("env-file", f"{shown} reads a host file into the container's environment")
            )
        elif name == "--security-opt" and value and _unconfined(value):
            found.append(
                Danger(
                    "security-opt",
                    f"{shown} replaces or turns off a container security profile "
                    "(a profile file from the host can allow every system call)",
                )
            )
        elif name in ("--volume", "--mount") and value:
            source = _bind_source(name, value)
            why = _protected(_resolve(source, cwd), roots) if source else None
            if why:
                found.append(Danger("bind-mount", f"{shown} mounts {why} into the container"))
    return found


def native_dangers(args: list[str]) -> list[Danger]:
    """Dangerous options of a native engine's argv (any prefix argparse would read as the
    option)."""
    for a in args:
        written = a.split("=", 1)[0].replace("_", "-")
        if len(written) > 4 and "--trust-remote-code".startswith(written):
            return [
                Danger("trust-remote-code", f"{a} runs Python code shipped in the model repository")
            ]
    return []


def check_allow_names(names: list[str]) -> list[str]:
    """``names`` when each is one `--allow` knows (or env:NAME); else E_INPUT listing the known
    ones."""
    unknown = [
        n
        for n in names
        if n not in ALLOW_NAMES
        and not (n.startswith("env:") and ENV_NAME_RE.fullmatch(n[4:]) and not never(n[4:]))
    ]
    if unknown:
        raise InputError(
            "E_INPUT",
            f"--allow {unknown[0]}: not a name rigbook knows (loader and interpreter "
            "variables can never be allowed)",
            remedy="Allow one of: " + ", ".join(sorted(ALLOW_NAMES)) + ", or env:NAME.",
        )
    return names


def refused(dangers: list[Danger], allowed: set[str]) -> list[Danger]:
    """The dangers ``allowed`` does not let through (one that names no allow name is always
    refused)."""
    return [d for d in dangers if d.allow is None or d.allow not in allowed]


def describe(danger: Danger) -> str:
    """The danger and how to allow it, or that nothing does."""
    return danger.what + (
        f" (allow with --allow {danger.allow})" if danger.allow else " (never allowed)"
    )


def remedy_for(danger: Danger) -> str:
    """What to do about one danger: the --allow that lets it through, or that none does."""
    if danger.allow:
        return f"Read it; if you trust it, run again with --allow {danger.allow}."
    return "No --allow lets this through: fix the recipe or ask its author."


def refuse_unless_allowed(dangers: list[Danger], allowed: set[str]) -> None:
    """Raise E_UNSAFE naming every dangerous option the user has not allowed by name."""
    left = refused(dangers, allowed)
    if left:
        names = sorted({d.allow for d in left if d.allow})
        never_allowed = [d for d in left if d.allow is None]
        remedy = (
            "Read each option; if you trust it, allow it by name: "
            + " ".join(f"--allow {n}" for n in names)
            if names
            else ""
        )
        if never_allowed:
            remedy = (
                "Some of these no --allow lets through: fix the recipe or ask its author. " + remedy
            ).strip()
        shown = names + (["never-allowed"] if never_allowed else [])
        raise LaunchError(
            "E_UNSAFE",
            f"the recipe asks for {len(left)} dangerous option(s): {', '.join(shown)}; "
            + "; ".join(d.what for d in left)[:600],
            remedy=remedy,
            details=[describe(d) for d in left],
        )


def _looks_like_path(model: str) -> bool:
    return model.startswith(("/", ".", "~", "$")) or model.count("/") != 1


def spec_dangers(kind: str, spec, target: Target) -> list[Danger]:
    """The rules every engine kind shares: its env, its arguments, its model path."""
    roots = [target.models_dir, rigbook_home()]
    args = list(getattr(spec, "args", []) or [])
    found = env_dangers(getattr(spec, "env", {}) or {}, roots=roots) + option_dangers(kind, args)
    found += native_dangers(args)
    model_path = getattr(spec, "model_path", None)
    if model_path:
        value = substitute([model_path], {"MODELS_DIR": str(target.models_dir)})[0]
        found += path_danger(value, target.models_dir, "model_path")
    model = getattr(spec, "model", None)
    if model and _looks_like_path(model):
        value = substitute([model], {"MODELS_DIR": str(target.models_dir)})[0]
        found += path_danger(value, target.models_dir, "model")
    return found
