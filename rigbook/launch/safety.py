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

import os
import re
from pathlib import Path

from rigbook.errors import InputError, LaunchError
from rigbook.launch.docker_args import parse_options
from rigbook.launch.placeholders import substitute
from rigbook.launch.plan import Target
from rigbook.launch.rules import Danger
from rigbook.launch.rules.env import ENV_NAME_RE, env_dangers, loader, never
from rigbook.launch.rules.paths import path_danger
from rigbook.launch.rules.table import (
    OPTION_ALLOW,
    ValueKind,
    Verdict,
    load_table,
    table_dangers,
    value_problem,
)

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
# Under /tmp: the sockets of the user's sessions (a tmux server runs commands for whoever connects).
SOCKET_DIRS = (".", "tmux-", "ssh-", "systemd-", "pulse-", "dbus-")
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

# What `--allow-option` takes: an option as an engine reads it.
OPTION_NAME_RE = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")

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


def _protected(resolved: str) -> str | None:
    """Why mounting ``resolved`` (absolute, symlinks resolved) from the host is never allowed,
    or None."""
    home = os.path.normpath(str(Path.home()))
    if resolved == "/":
        return "the whole host filesystem"
    if resolved == home or home.startswith(resolved.rstrip("/") + "/"):
        return f"your home directory ({home})"
    if resolved.startswith(home + "/"):
        # ~/.ssh and ~/.config hold credentials, ~/bin and ~/.local programs the user runs.
        return f"a folder of your home directory (~/{resolved[len(home) + 1 :].split('/')[0]})"
    if resolved.startswith("/home/"):
        return "another user's home directory"
    for system in SYSTEM_DIRS:
        if (
            resolved == system
            or resolved.startswith(system + "/")
            or system.startswith(resolved + "/")
        ):
            return f"the system directory {system}"
    if resolved.startswith("/tmp/") and resolved[5:].startswith(SOCKET_DIRS):
        return "a folder of /tmp where sessions keep their sockets (tmux, X11, ssh agents)"
    for whole in WHOLE_DIRS:
        if resolved == whole or whole.startswith(resolved + "/"):
            return f"the directory {whole} as a whole"
    return None


def _bind_source(value: str) -> str | None:
    """The host path a ``--volume`` value binds, as written; None for a named or anonymous volume.

    (``--mount`` is refused whole: docker binds the last of ``source``/``src``, a trap for any
    reader of its fields.)
    """
    if ":" not in value:
        return None  # `-v /data`: an anonymous volume at /data inside the container
    source = value.split(":", 1)[0]
    # Volume names start with a letter or digit; docker reads anything else as a host path.
    return source if source.startswith(("/", "~", ".")) or not source[:1].isalnum() else None


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
        return env_dangers({name: val}, container=True)
    if loader(name):
        return env_dangers({name: ""}, container=True)
    return [
        Danger(
            f"env:{name}", f"{shown} copies this host's {name} (a token, a path) into the container"
        )
    ]


def _bind_danger(shown: str, source: str, cwd: str, roots: list[Path] | None) -> list[Danger]:
    """A host folder a recipe binds: the models folder is rigbook's; a protected one never; any
    other only with ``--allow bind-mount`` (a docker recipe names volumes, not host folders)."""
    resolved = _resolve(source, cwd)
    if any(
        resolved == os.path.realpath(r)
        or resolved.startswith(os.path.realpath(r).rstrip("/") + "/")
        for r in roots or []
    ):
        return []
    why = _protected(resolved)
    if why:
        return [Danger(None, f"{shown} mounts {why} into the container")]
    return [
        Danger(
            "bind-mount",
            f"{shown} mounts the host folder {resolved} into the container (a docker recipe "
            "names volumes; rigbook mounts the weights itself)",
        )
    ]


def _special(o, *, needs: set[str], cwd: str, gpus: set[str] | None, roots) -> list[Danger] | None:
    """The checks of options whose danger depends on the value; None: the table decides."""
    name, value, shown = o.name, o.value, o.shown
    if (
        name in ("--privileged", "--use-api-socket")
        and value is not None
        and value.lower() == "false"
    ):
        return []
    if name in JOINS and value and value.lower().startswith("container:"):
        return [
            Danger(
                "join-container", f"{shown} joins another container's {name.lstrip('-')} namespace"
            )
        ]
    if name == "--env" and value is not None:
        return _env_option(shown, value)
    if name in HOST_NAMESPACES and value is not None:
        allow = HOST_NAMESPACES[name]
        if value != "host" or allow in needs:
            return None if name == "--ipc" else []
        return [
            Danger(
                allow, f"{shown} shares the host's {name.lstrip('-')} namespace with the container"
            )
        ]
    if name == "--device" and value and _gpu_device(value, gpus):
        return []
    if name == "--security-opt" and value and not _unconfined(value):
        return []
    if name == "--volume" and value:
        source = _bind_source(value)
        return _bind_danger(shown, source, cwd, roots) if source else []
    return None


def docker_dangers(
    args: list[str],
    *,
    needs: set[str] | None = None,
    cwd: str | None = None,
    gpus: set[str] | None = None,
    roots: list[Path] | None = None,
) -> list[Danger]:
    """What ``docker run`` options ``args`` ask for beyond a docker recipe's model.

    A docker recipe is an image, env knobs, named volumes, the read-only weights mount, GPUs and
    a port; every other option is refused (its --allow name, where it has one, lets it through;
    one docker's table does not list needs ``--allow-option NAME``). ``cwd`` is the folder docker
    runs in (relative bind sources resolve against it); ``gpus`` the GPUs (indices and UUIDs)
    this launch may pass in (None: any); ``roots`` folders that are rigbook's own to mount.
    """
    needs = DOCKER_KIND_NEEDS if needs is None else needs
    cwd = cwd or os.getcwd()
    table = load_table("docker")
    rules = table.index() if table else {}
    found: list[Danger] = []
    options, _ = parse_options(args)
    for o in options:
        if o.name == "":
            found.append(
                Danger(
                    None,
                    f"{o.value!r} is not an option: docker would read it as the image, and "
                    "what follows as the container's command",
                )
            )
            continue
        special = _special(o, needs=needs, cwd=cwd, gpus=gpus, roots=roots)
        if special is not None:
            found += special
            continue
        rule = rules.get(o.name)
        if rule is None:
            found.append(
                Danger(
                    OPTION_ALLOW + o.name,
                    f"{o.shown[:80]}: {o.name[:40]} is not a docker run option rigbook knows "
                    f"({table.source if table else 'no table'})",
                )
            )
        elif rule.verdict == Verdict.refuse:
            found.append(Danger(rule.allow, f"{o.shown[:120]}: {o.name} {rule.why}"))
        elif rule.verdict == Verdict.allow and rule.value != ValueKind.flag:
            problem = value_problem(rule, o.value or "", None)
            if problem:
                found.append(Danger(None, f"{o.shown[:120]}: the value {problem}"))
    return found


def check_allow_names(names: list[str]) -> list[str]:
    """``names`` when each is one `--allow` knows (or env:NAME); else E_INPUT listing the known
    ones."""
    unknown = [
        n
        for n in names
        if n not in ALLOW_NAMES
        and not (n.startswith("env:") and ENV_NAME_RE.fullmatch(n[4:]) and not never(n[4:]))
        and not (n.startswith(OPTION_ALLOW) and OPTION_NAME_RE.fullmatch(n[len(OPTION_ALLOW) :]))
    ]
    if unknown:
        raise InputError(
            "E_INPUT",
            f"--allow {unknown[0]}: not a name rigbook knows (loader and interpreter "
            "variables can never be allowed)",
            remedy="Allow one of: "
            + ", ".join(sorted(ALLOW_NAMES))
            + ", or env:NAME (an option: --allow-option NAME).",
        )
    return names


def allow_flag(name: str) -> str:
    """The command-line words that allow ``name``: ``--allow NAME`` or ``--allow-option OPT``."""
    if name.startswith(OPTION_ALLOW):
        return f"--allow-option {name[len(OPTION_ALLOW) :]}"
    return f"--allow {name}"


def refused(dangers: list[Danger], allowed: set[str]) -> list[Danger]:
    """The dangers ``allowed`` does not let through (one that names no allow name is always
    refused)."""
    return [d for d in dangers if d.allow is None or d.allow not in allowed]


def describe(danger: Danger) -> str:
    """The danger and how to allow it, or that nothing does."""
    return danger.what + (
        f" (allow with {allow_flag(danger.allow)})" if danger.allow else " (never allowed)"
    )


def remedy_for(danger: Danger) -> str:
    """What to do about one danger: the --allow that lets it through, or that none does."""
    if danger.allow:
        return f"Read it; if you trust it, run again with {allow_flag(danger.allow)}."
    return "Nothing lets this through: fix the recipe or ask its author."


def refuse_unless_allowed(dangers: list[Danger], allowed: set[str]) -> None:
    """Raise E_UNSAFE naming every dangerous option the user has not allowed by name."""
    left = refused(dangers, allowed)
    if left:
        names = sorted({d.allow for d in left if d.allow})
        never_allowed = [d for d in left if d.allow is None]
        remedy = (
            "Read each option; if you trust it, allow it by name: "
            + " ".join(allow_flag(n) for n in names)
            if names
            else ""
        )
        if never_allowed:
            remedy = (
                "Nothing lets some of these through: fix the recipe or ask its author. " + remedy
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
    """The rules every native engine kind shares: its env, its arguments (default deny against
    the kind's option table), its model path."""
    args = list(getattr(spec, "args", []) or [])
    found = env_dangers(getattr(spec, "env", {}) or {}, kind=kind)
    found += table_dangers(kind, args, models_dir=target.models_dir)
    model_path = getattr(spec, "model_path", None)
    if model_path:
        value = substitute([model_path], {"MODELS_DIR": str(target.models_dir)})[0]
        found += path_danger(value, target.models_dir, "model_path")
    model = getattr(spec, "model", None)
    if model and _looks_like_path(model):
        value = substitute([model], {"MODELS_DIR": str(target.models_dir)})[0]
        found += path_danger(value, target.models_dir, "model")
    return found
