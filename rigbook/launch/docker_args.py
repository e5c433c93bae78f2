"""Read `docker run` options the way docker's flag parser (spf13/pflag) does.

What the safety rules check must be what docker will do, so options are read
with docker's own rules: ``--opt=value`` or ``--opt value``; a short flag takes
its value as ``-v value``, ``-vvalue`` or ``-v=value``; grouped short flags
(``-itv /etc:/e``) are booleans except the one that takes a value, which ends
the group. Long and short names are normalised (``-v`` → ``--volume``, ``--net``
→ ``--network``) so a rule names one option once.

An option rigbook does not know is read as a boolean: its next item is then
read as an option of its own, so nothing hides behind an unknown name.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

SHORT = {
    "a": "--attach",
    "c": "--cpu-shares",
    "d": "--detach",
    "e": "--env",
    "h": "--hostname",
    "i": "--interactive",
    "l": "--label",
    "m": "--memory",
    "p": "--publish",
    "P": "--publish-all",
    "q": "--quiet",
    "t": "--tty",
    "u": "--user",
    "v": "--volume",
    "w": "--workdir",
}
ALIASES = {"--net": "--network", "--net-alias": "--network-alias", "--dns-opt": "--dns-option"}

# Every `docker run` option that takes a value (docker 27/28).
VALUED = {
    "--add-host",
    "--annotation",
    "--attach",
    "--blkio-weight",
    "--blkio-weight-device",
    "--cap-add",
    "--cap-drop",
    "--cgroup-parent",
    "--cgroupns",
    "--cidfile",
    "--cpu-count",
    "--cpu-percent",
    "--cpu-period",
    "--cpu-quota",
    "--cpu-rt-period",
    "--cpu-rt-runtime",
    "--cpu-shares",
    "--cpus",
    "--cpuset-cpus",
    "--cpuset-mems",
    "--detach-keys",
    "--device",
    "--device-cgroup-rule",
    "--device-read-bps",
    "--device-read-iops",
    "--device-write-bps",
    "--device-write-iops",
    "--dns",
    "--dns-option",
    "--dns-search",
    "--domainname",
    "--entrypoint",
    "--env",
    "--env-file",
    "--expose",
    "--gpus",
    "--group-add",
    "--health-cmd",
    "--health-interval",
    "--health-retries",
    "--health-start-interval",
    "--health-start-period",
    "--health-timeout",
    "--hostname",
    "--io-maxbandwidth",
    "--io-maxiops",
    "--ip",
    "--ip6",
    "--ipc",
    "--isolation",
    "--kernel-memory",
    "--label",
    "--label-file",
    "--link",
    "--link-local-ip",
    "--log-driver",
    "--log-opt",
    "--mac-address",
    "--memory",
    "--memory-reservation",
    "--memory-swap",
    "--memory-swappiness",
    "--mount",
    "--name",
    "--network",
    "--network-alias",
    "--oom-score-adj",
    "--pid",
    "--pids-limit",
    "--platform",
    "--publish",
    "--pull",
    "--restart",
    "--runtime",
    "--security-opt",
    "--shm-size",
    "--stop-signal",
    "--stop-timeout",
    "--storage-opt",
    "--sysctl",
    "--tmpfs",
    "--ulimit",
    "--user",
    "--userns",
    "--uts",
    "--volume",
    "--volume-driver",
    "--volumes-from",
    "--workdir",
}


class DockerOption(BaseModel):
    """One option docker reads: its long name, its value (None for a bare boolean), and argv items that give it."""

    name: str = Field(
        description="The long name ('--volume'); empty for a positional item (the image, or what follows)."
    )
    value: str | None = None
    tokens: list[str] = Field(
        description="The argv items for this option alone (a grouped flag is split out)."
    )

    @property
    def shown(self) -> str:
        """The option as written, for messages."""
        return " ".join(self.tokens)


def _long(item: str, rest: list[str]) -> tuple[DockerOption, int]:
    """A ``--name[=value]`` item; the number of following items it consumed."""
    written, has_value, value = item.partition("=")
    name = ALIASES.get(written, written)
    if has_value:
        return DockerOption(name=name, value=value, tokens=[item]), 0
    if name in VALUED and rest:
        return DockerOption(name=name, value=rest[0], tokens=[item, rest[0]]), 1
    return DockerOption(name=name, tokens=[item]), 0


def _shorts(item: str, rest: list[str]) -> tuple[list[DockerOption], int]:
    """A group of short flags (``-itv``, ``-v/x:/y``, ``-d=false``); the number of following items consumed."""
    found: list[DockerOption] = []
    letters = item[1:]
    while letters:
        letter, letters = letters[0], letters[1:]
        name = SHORT.get(letter, f"-{letter}")
        if letters.startswith("=") and len(letters) > 1:
            found.append(
                DockerOption(name=name, value=letters[1:], tokens=[f"-{letter}={letters[1:]}"])
            )
            return found, 0
        if name in VALUED:
            if letters:
                found.append(DockerOption(name=name, value=letters, tokens=[f"-{letter}", letters]))
                return found, 0
            if rest:
                found.append(DockerOption(name=name, value=rest[0], tokens=[f"-{letter}", rest[0]]))
                return found, 1
        found.append(DockerOption(name=name, tokens=[f"-{letter}"]))
    return found, 0


def parse_options(
    args: list[str], *, stop_at_positional: bool = False
) -> tuple[list[DockerOption], int]:
    """The options in ``args`` and the index of the first positional item (``len(args)`` when there is none).

    With ``stop_at_positional`` reading stops there (``docker run OPTIONS IMAGE …``); without it a positional
    item is kept as an option with an empty name and reading goes on, so a check sees every item.
    """
    options: list[DockerOption] = []
    first_positional = len(args)
    i = 0
    while i < len(args):
        item, rest = args[i], args[i + 1 :]
        if item == "--" or not item.startswith("-") or item == "-":
            first_positional = min(first_positional, i + 1 if item == "--" else i)
            if stop_at_positional:
                break
            options.append(DockerOption(name="", value=item, tokens=[item]))
            i += 1
        elif item.startswith("--"):
            option, used = _long(item, rest)
            options.append(option)
            i += 1 + used
        else:
            group, used = _shorts(item, rest)
            options.extend(group)
            i += 1 + used
    return options, first_positional


def drop_docker_options(args: list[str], names: set[str]) -> tuple[list[str], list[str]]:
    """``args`` without the options whose long name is in ``names`` (also inside a group); and what was dropped."""
    options, _ = parse_options(args)
    kept = [token for o in options if o.name not in names for token in o.tokens]
    return kept, [o.shown for o in options if o.name in names]


class NamedVolume(BaseModel):
    """A docker volume by name, mounted at ``target`` in the container (``-v NAME:/PATH[:ro]``)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
    target: str = Field(pattern=r"^/[^:\x00]*$")
    read_only: bool = False


class WeightsMount(BaseModel):
    """Fetched weights at their pinned revision, mounted read-only at ``target``."""

    host: str
    target: str


class DockerRun(BaseModel):
    """A docker recipe as rigbook runs it: image, env knobs, named volumes, the read-only weights
    mounts, GPUs and the port. ``docker run``'s argv is built from this model alone; ``options``
    holds the recipe's other options that passed the safety rules (resource limits, and those
    the user allowed by name), as written."""

    image: str
    name: str
    gpus: str | None = None
    publish: str | None = Field(default=None, description="HOST_IP:HOST_PORT:CONTAINER_PORT.")
    init: bool = False
    ipc: str | None = None
    network: str | None = Field(default=None, description="'host' only when the user allows it.")
    volumes: list[NamedVolume] = Field(default_factory=list)
    weights: list[WeightsMount] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    copy_env: list[str] = Field(
        default_factory=list, description="Variables docker copies from rigbook's environment."
    )
    options: list[str] = Field(default_factory=list)

    def argv(self) -> list[str]:
        """``docker run --rm --name …`` for this model."""
        argv = ["docker", "run", "--rm", "--name", self.name]
        if self.gpus:
            argv += ["--gpus", self.gpus]
        if self.publish:
            argv += ["-p", self.publish]
        if self.network:
            argv += ["--network", self.network]
        if self.init:
            argv.append("--init")
        if self.ipc:
            argv += ["--ipc", self.ipc]
        argv += self.options
        for volume in self.volumes:
            argv += ["-v", f"{volume.name}:{volume.target}" + (":ro" if volume.read_only else "")]
        for mount in self.weights:
            argv += ["-v", f"{mount.host}:{mount.target}:ro"]
        argv += [item for key, value in self.env.items() for item in ("-e", f"{key}={value}")]
        argv += [item for key in self.copy_env for item in ("-e", key)]
        return [*argv, self.image]


def named_volume(value: str) -> NamedVolume | None:
    """``NAME:/PATH[:ro]`` as a named volume, or None (a host path, an anonymous volume, other
    modes)."""
    parts = value.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        return None
    try:
        return NamedVolume(name=parts[0], target=parts[1], read_only=parts[2:] == ["ro"])
    except ValueError:
        return None


def split_model_options(args: list[str]) -> tuple[dict, list[str]]:
    """The recipe's ``docker run`` options as the model's fields (init, ipc, network, named
    volumes, env) and the rest, as written."""
    fields: dict = {"volumes": [], "env": {}}
    rest: list[str] = []
    options, _ = parse_options(args)
    for o in options:
        volume = named_volume(o.value or "") if o.name == "--volume" else None
        if o.name == "--init" and o.value is None:
            fields["init"] = True
        elif o.name in ("--ipc", "--network") and o.value:
            fields[o.name.lstrip("-")] = o.value
        elif volume is not None:
            fields["volumes"].append(volume)
        elif o.name == "--env" and o.value and "=" in o.value:
            key, _, val = o.value.partition("=")
            fields["env"][key] = val
        else:
            rest += o.tokens
    return fields, rest
