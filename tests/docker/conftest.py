"""The docker tests' image and their container bookkeeping: each test names its launches
``docker-run-…`` and every container left under that prefix fails the test."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch.helpers import write_recipe

ROOT = Path(__file__).parent.parent.parent
IMAGE = "rigbook/llama-server-cpu:local"
RECIPE = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp-docker"
# The named volume the catalog recipe mounts at /cache.
VOLUME = "rigbook-smollm2-cache"


@pytest.fixture(scope="session")
def engine_image(docker_daemon) -> Iterator[str]:
    """The local engine image in the daemon, built or imported now where it is missing or stale
    (`make docker-image` builds its root filesystem ahead; this imports it). The catalog recipe's
    cache volume is removed after the run where the run made it."""
    had_volume = (
        subprocess.run(["docker", "volume", "inspect", VOLUME], capture_output=True).returncode == 0
    )
    done = subprocess.run(
        ["sh", str(ROOT / "scripts" / "docker_image.sh"), "load", sys.executable],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == IMAGE
    yield IMAGE
    if not had_volume:
        subprocess.run(["docker", "volume", "rm", "--force", VOLUME], capture_output=True)


def containers(prefix: str = "rigbook-docker-run") -> list[str]:
    """Every container (any state) whose name starts with ``prefix``: name and status."""
    done = subprocess.run(
        ["docker", "ps", "--all", "--format", "{{.Names}} {{.Status}}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if line.startswith(prefix)]


@pytest.fixture
def no_leftovers(engine_image) -> Iterator[None]:
    """Fails the test when a container of its launches is left in any state (then removes it)."""
    yield
    left = containers()
    for line in left:
        subprocess.run(
            ["docker", "rm", "--force", "--volumes", line.split()[0]], capture_output=True
        )
    assert not left, f"containers left behind: {left}"


def knobs(**extra: str) -> dict:
    """The local image's knobs on the host network (PORT and HOST rigbook sets)."""
    return {
        "MODEL": "smollm2-135m-instruct",
        "PORT": "8000",
        "HOST": "0.0.0.0",
        "CTX": "1024",
        **extra,
    }


def docker_recipe(tmp_path: Path, slug: str, *, image: str = IMAGE, args=(), gpus=0, **env):
    launch = {
        "kind": "docker",
        "image": image,
        "env": knobs(**env),
        "args": ["--init", "--network", "host", *args],
    }
    return write_recipe(tmp_path, slug, launch, gpus=gpus)
