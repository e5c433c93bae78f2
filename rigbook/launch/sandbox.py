"""A sandbox around every native engine: bubblewrap (``bwrap``) in front of the engine's argv.

A recipe is a stranger's text, and a native engine has hundreds of options that open, write or
serve files. Whatever an option filter misses, the engine process itself can only:

* read the system (``/`` read-only), its own program and venv, and its weights;
* write its own folder under ``RIGBOOK_HOME`` (``sandbox/NAME``: its home, caches and working
  directory) and, for a script repository, its checkout;
* see a private ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run``, and none of the user's home, other
  homes or rigbook's own state (tokens, locks, other launches' logs);
* see only its own processes (a PID namespace, so no other process's ``/proc/PID/environ``) and no
  capabilities, even when rigbook runs as root;
* get an environment rigbook writes out in full: no variable of the user's passes unless named
  here (locale, PATH, library paths, the GPU defaults) or set by the recipe and shown in the plan.

The network is shared: the engine must answer rigbook on loopback, and bubblewrap cannot limit
which ports it binds. The wrapped argv is part of the plan, so the user reads what runs.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from rigbook.errors import LaunchError
from rigbook.home import rigbook_home
from rigbook.launch.placeholders import GPU_ENV_DEFAULTS
from rigbook.launch.plan import LaunchCommand, Target
from rigbook.launch.rules import Danger
from rigbook.paths import inside, real
from rigbook.preflight.checks.sandbox import ALLOW, ISOLATION, NATIVE_KINDS, availability, probe

#: The user's variables an engine gets: none of them holds a secret.
HOST_ENV = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    *GPU_ENV_DEFAULTS,
)
#: Starts the engine with exactly the env given (coreutils' env, inside the sandbox).
ENV_PROGRAM = "/usr/bin/env"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Private (empty, in memory) in the sandbox whatever the host has there.
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/run")
#: Homes: hidden; the engine's own home is its folder under RIGBOOK_HOME.
HOMES = ("/home", "/root")
#: The system's own secrets (password hashes, SSH host keys, TLS private keys): readable by root,
#: so masked: an engine started as root would otherwise read them with the rest of the system.
SYSTEM_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/ssl/private",
)


def sandbox_dangers(kind: str) -> list[Danger]:
    """A refusal (allowed only by ``--allow no-sandbox``) for a native kind where no sandbox can be
    made."""
    if kind not in NATIVE_KINDS:
        return []
    found = availability()
    if found.ok:
        return []
    return [
        Danger(
            ALLOW,
            f"the {kind} engine would run without a sandbox, with your rights ({found.reason})",
        )
    ]


def sandboxed(kind: str, target: Target) -> bool:
    """Whether a launch of ``kind`` on ``target`` runs inside the sandbox."""
    return kind in NATIVE_KINDS and ALLOW not in target.allow and availability().ok


def engine_folder(target: Target) -> Path:
    """The launch's own folder: the engine's home, caches and working directory."""
    return rigbook_home() / "sandbox" / target.name


def note(kind: str, target: Target) -> str:
    """One line for the plan: where the engine may write, or that it runs unconfined."""
    if sandboxed(kind, target):
        return (
            f"sandbox: bubblewrap; it writes only {engine_folder(target)}, sees none of your home "
            "and none of your environment but the variables shown"
        )
    return "NO SANDBOX: the engine runs with your rights (your files, your environment)"


def _root_of(program: Path) -> list[Path]:
    """What a program needs to run: its venv (and the venv's base Python), else its own folder."""
    for parent in program.parents:
        cfg = parent / "pyvenv.cfg"
        if cfg.is_file():
            roots = [parent]
            for line in cfg.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    roots.append(Path(value.strip()).parent)
            return roots
    return [program.parent]


def program_roots(program: str, path_env: str) -> list[Path]:
    """The folders ``program`` (argv[0]: absolute, or a name on ``path_env``) runs from, symlinks
    followed. A relative path (a script in its clone) gives none: a link in the clone could name
    any folder of yours."""
    if program.startswith("/"):
        found: str | None = program
    elif "/" in program:
        return []
    else:
        found = shutil.which(program, path=path_env)
    if not found:
        return []
    return [root for path in {Path(found), real(found)} for root in _root_of(path)]


def _hidden() -> list[Path]:
    """Folders replaced by an empty one: homes, the user's home, rigbook's state."""
    home = Path(os.path.expanduser("~"))
    paths = [Path(p) for p in HOMES] + [home, rigbook_home()]
    # A home of `/` (some service accounts) is not hidden: that would hide the system too.
    return [p for p in dict.fromkeys(real(p) for p in paths) if p.exists() and p != Path("/")]


def _env(command: LaunchCommand, folder: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in HOST_ENV if k in os.environ}
    env.setdefault("PATH", SYSTEM_PATH)
    env.update(
        HOME=str(folder),
        TMPDIR="/tmp",
        XDG_CACHE_HOME=str(folder / ".cache"),
        XDG_CONFIG_HOME=str(folder / ".config"),
        XDG_DATA_HOME=str(folder / ".local" / "share"),
    )
    return {**env, **command.env}


def wrap(command: LaunchCommand, target: Target, *, reads: list[Path]) -> LaunchCommand:
    """``command`` with the bubblewrap sandbox in front (``LaunchCommand.sandbox``).

    ``reads``: what the engine reads besides the system (its program's venv, its weights),
    read-only. Its working directory is ``command.cwd`` when given (a script repository's
    checkout, made writable), else its own folder.
    """
    program = availability().program
    if program is None:
        return command
    folder = engine_folder(target)
    cwd = Path(command.cwd) if command.cwd else folder
    env = _env(command, folder)
    hidden = _hidden()
    # Only what lies in a hidden or private folder needs binding again (a venv or models folder in
    # a home, or under /tmp); the rest of / is readable as it is.
    masked = [*hidden, *(real(p) for p in PRIVATE)]
    hid = [r for r in dict.fromkeys(real(p) for p in reads) if any(inside(h, r) for h in masked)]
    shown = [r for r in hid if not any(o != r and inside(o, r) for o in hid)]
    resolv = real("/etc/resolv.conf")  # often a link into /run, which is private here
    argv = [program, *ISOLATION, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # A fresh /dev (no terminal of the user's); the GPUs, and InfiniBand for NCCL, bound back.
    for device in [*sorted(Path("/dev").glob("nvidia*")), Path("/dev/infiniband")]:
        if device.exists():
            argv += ["--dev-bind", str(device), str(device)]
    for private in [*(p for p in PRIVATE if Path(p).is_dir()), *map(str, hidden)]:
        argv += ["--tmpfs", private]
    for secret in map(Path, SYSTEM_SECRETS):
        if secret.is_dir() and not secret.is_symlink():
            argv += ["--tmpfs", str(secret)]
        elif secret.is_file() and not secret.is_symlink():
            argv += ["--ro-bind", "/dev/null", str(secret)]
    if inside("/run", resolv):
        argv += ["--ro-bind-try", str(resolv.parent), str(resolv.parent)]
    for writable in dict.fromkeys([folder, cwd]):
        argv += ["--bind", str(writable), str(writable)]
    # Read-only after the writable ones: weights inside a writable folder stay read-only.
    for readable in shown:
        argv += ["--ro-bind-try", str(readable), str(readable)]
    # The env as `env -i K=V …` rather than bwrap's `--setenv K V`: the plan reads as a command
    # line does, and the engine's environment is exactly these, nothing inherited.
    argv += ["--chdir", str(cwd), "--clearenv", "--", ENV_PROGRAM, "-i"]
    return command.model_copy(
        update={"sandbox": [*argv, *(f"{key}={value}" for key, value in env.items())]}
    )


def confine(kind: str, target: Target, command: LaunchCommand | None) -> LaunchCommand | None:
    """The engine's command inside the sandbox (unchanged: no command, not a native kind, or
    ``--allow no-sandbox``; where no sandbox can be made, the plan refuses the launch).

    It reads its weights in the models folder (the rules keep a recipe's model paths there), its
    program's venv or folder, and rigbook's own venv (a model shipped in a package, such as the
    embedded one), each with the Python it was made from (pyenv and uv keep theirs in your home).
    """
    if command is None or not sandboxed(kind, target):
        return command
    path = os.environ.get("PATH", SYSTEM_PATH)
    reads = [
        target.models_dir,
        *program_roots(command.argv[0], path),
        *program_roots(sys.executable, path),
    ]
    return wrap(command, target, reads=reads)


def exec_argv(command: LaunchCommand) -> list[str]:
    """The argv to start: bubblewrap tried once, and the sandbox's writable folders under
    RIGBOOK_HOME made (bubblewrap binds only what exists); E_UNSAFE when no sandbox can be made."""
    items = command.sandbox
    if not items:
        return command.argv
    found = probe()
    if not found.ok:
        raise LaunchError(
            "E_UNSAFE",
            f"the engine would run without a sandbox, with your rights ({found.reason})",
            remedy=f"Fix bubblewrap (see `rigbook check`, W_SANDBOX), or, if you trust the "
            f"recipe, run again with --allow {ALLOW}.",
        )
    state = rigbook_home()
    for at, item in enumerate(items[:-2]):
        if item == "--bind" and inside(state, items[at + 1]):
            Path(items[at + 1]).mkdir(parents=True, exist_ok=True)
    return [*command.sandbox, *command.argv]
