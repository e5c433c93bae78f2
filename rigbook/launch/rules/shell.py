"""A script repository's ``start`` is an argv, never a shell program written in the recipe.

Running the repository's own files is what a script recipe is (and the plan says
so); a recipe that carries its program inline (``sh -c``, ``bash -c``,
``python -c``, ``perl -e``, ``eval``, pipes) hides it from anyone who reads the
repository at the pinned commit, so it needs ``--allow shell``.
"""

from __future__ import annotations

import os
import re

from rigbook.launch.rules import Danger

SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox"}
# Interpreter → the options that take the program from the command line.
INLINE = {
    "python": {"c"},
    "perl": {"e", "E"},
    "ruby": {"e"},
    "node": {"e", "p"},
    "nodejs": {"e", "p"},
    "php": {"r"},
    "lua": {"e"},
    "Rscript": {"e"},
    "deno": set(),
    "osascript": {"e"},
    "tclsh": set(),
}
LONG_INLINE = {"--eval", "--print", "--command", "--exec"}
# Programs that run another argv: the rule looks through them.
WRAPPERS = {
    "env",
    "nice",
    "nohup",
    "timeout",
    "stdbuf",
    "setsid",
    "taskset",
    "numactl",
    "exec",
    "command",
    "time",
    "sudo",
    "doas",
    "chrt",
    "ionice",
    "xargs",
    "uv",
    "uvx",
}
ALWAYS_INLINE = {"eval", "awk", "gawk", "mawk", "sed", "source", "."}
SHELL_SYNTAX = {"|", "||", "&&", ";", "&", ">", ">>", "<", "<<"}


def _program(argv0: str) -> str:
    name = os.path.basename(argv0)
    return re.sub(r"[\d.]+$", "", name) or name  # python3.11 → python


def _inline_flag(args: list[str], letters: set[str], *, shell: bool) -> str | None:
    for item in args:
        if item in LONG_INLINE or item.split("=", 1)[0] in LONG_INLINE:
            return item
        if not item.startswith("-"):
            return None  # a script file: the program is the repository's
        if not item.startswith("--") and set(item[1:]) & (letters | ({"c"} if shell else set())):
            return item
    return None


def shell_dangers(start: list[str]) -> list[Danger]:
    """An inline program in a script repository's start argv (looking through env/nice/timeout
    …)."""
    argv = list(start)
    while argv and _program(argv[0]) in WRAPPERS:
        argv = argv[1:]
        while argv and (
            argv[0].startswith("-") or "=" in argv[0] or argv[0].replace(".", "").isdigit()
        ):
            argv = argv[1:]
    if not argv:
        return []
    program = _program(argv[0])
    shown = " ".join(start)[:120]
    if program in SHELLS:
        flag = _inline_flag(argv[1:], set(), shell=True)
        if flag or len(argv) == 1 or argv[1] == "-":
            return [
                Danger(
                    "shell",
                    f"start `{shown}` runs a shell program written in the recipe "
                    f"({flag or 'stdin'}), "
                    "not a file of the repository",
                )
            ]
    elif program in ALWAYS_INLINE:
        return [
            Danger(
                "shell", f"start `{shown}` runs {program}, whose program is written in the recipe"
            )
        ]
    elif program in INLINE:
        flag = _inline_flag(argv[1:], INLINE[program], shell=False)
        if flag:
            return [
                Danger(
                    "shell",
                    f"start `{shown}` runs {program} {flag} with a program written in the recipe",
                )
            ]
    if any(item.strip() in SHELL_SYNTAX for item in argv[1:]):
        return [
            Danger(
                "shell",
                f"start `{shown}` holds shell syntax (a pipe or list) as an argument; "
                "rigbook runs no shell, so only a shell program would read it",
            )
        ]
    return []
