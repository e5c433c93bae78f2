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
