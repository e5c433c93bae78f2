"""What `up` and `down` ask the docker daemon themselves: does it answer this user, and which
containers did killed launches leave.

Every container rigbook starts is named ``rigbook-NAME`` and labelled ``org.rigbook.launch=NAME``
and ``org.rigbook.home=RIGBOOK_HOME`` (rigbook/launch/engines/docker.py). A launch whose rigbook
or `docker run` client was killed leaves its container running, exited or in Created; `down`
removes those of its own RIGBOOK_HOME that the launch records no longer account for (another
home's launches are not its to stop), and the next `up` of the same name removes its own first.
"""

from __future__ import annotations

import shutil
import subprocess

from rigbook.errors import EnvironmentProblem, LaunchError, RigbookError
from rigbook.home import rigbook_home

LAUNCH_LABEL = "org.rigbook.launch"
HOME_LABEL = "org.rigbook.home"
TIMEOUT_S = 30.0


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT_S,
        check=False,
    )


def daemon_problem() -> RigbookError | None:
    """Why the docker daemon cannot be used by this user now, as a coded error; None when it
    answers."""
    try:
        done = _docker("version", "--format", "{{.Server.Version}}")
    except subprocess.TimeoutExpired:
        return EnvironmentProblem(
            "E_DOCKER", f"the docker daemon did not answer `docker version` in {TIMEOUT_S:.0f} s"
        )
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).strip().splitlines()
    line = next(
        (s for s in said if "denied" in s or "daemon" in s.lower()), said[-1] if said else ""
    )
    if "permission denied" in line:
        return EnvironmentProblem("E_DOCKER_DENIED", f"docker's socket refused this user: {line}")
    return EnvironmentProblem(
        "E_DOCKER",
        f"no docker daemon answers: {line or 'docker version failed'}",
        remedy="Start the docker daemon (`sudo systemctl start docker`), or point DOCKER_HOST at "
        "one that runs; `docker info` must work for your user.",
    )


def check_daemon() -> None:
    """Raise :func:`daemon_problem`'s error, if any."""
    problem = daemon_problem()
    if problem is not None:
        raise problem


def labels(name: str) -> dict[str, str]:
    """The labels of launch ``name``'s container."""
    return {LAUNCH_LABEL: name, HOME_LABEL: str(rigbook_home())}


def labelled(name: str | None = None) -> list[tuple[str, str]]:
    """Containers this RIGBOOK_HOME's launches started (any state), of launch ``name`` or of
    all: (container name, launch name)."""
    selector = f"{LAUNCH_LABEL}={name}" if name else LAUNCH_LABEL
    done = _docker(
        "ps",
        "--all",
        "--filter",
        f"label={selector}",
        "--filter",
        f"label={HOME_LABEL}={rigbook_home()}",
        "--format",
        f'{{{{.Names}}}} {{{{.Label "{LAUNCH_LABEL}"}}}}',
    )
    if done.returncode != 0:
        raise LaunchError(
            "E_ENGINE_EXIT",
            f"`docker ps` failed: {(done.stderr or done.stdout).strip()}",
            remedy="Check that `docker info` works for your user.",
        )
    return [
        (parts[0], parts[1])
        for parts in (line.split(" ", 1) for line in done.stdout.splitlines())
        if len(parts) == 2
    ]


def remove_leftovers(name: str | None, keep: set[str]) -> list[str]:
    """Remove the labelled containers of launch ``name`` (or of every launch) whose launch is not
    in ``keep`` (those still recorded as running); the names removed. Nothing where docker is
    not installed or does not answer: there is then nothing it could have left."""
    if shutil.which("docker") is None or daemon_problem() is not None:
        return []
    removed = []
    for container, launch in labelled(name):
        if launch not in keep and _docker("rm", "--force", "--volumes", container).returncode == 0:
            removed.append(container)
    return removed
