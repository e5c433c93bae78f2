"""Ctrl-C during `up` and kill -9 of rigbook (and of docker's client) leave no container running
or in Created: `up` stops its own, and the next `up` or `down` removes what a killed one left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.conftest import free_port
from tests.docker.conftest import RECIPE, containers
from tests.launch.helpers import rigbook


def start_up(name: str) -> subprocess.Popen[str]:
    """`rigbook up` of the docker recipe, in its own process group as a shell would start it."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "rigbook", "up", RECIPE, "--yes"),
            *("--allow", "network-host", "--port", str(free_port())),
            *("--name", name, "--timeout", "240"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def wait_for(condition, what: str, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not seen in {timeout:.0f} s: {what}"
        time.sleep(0.1)


def container_listed(name: str) -> bool:
    return any(line.split()[0] == f"rigbook-{name}" for line in containers())


def engine_log(name: str) -> str:
    done = subprocess.run(["docker", "logs", f"rigbook-{name}"], capture_output=True, text=True)
    return done.stdout + done.stderr


def docker_client(name: str) -> psutil.Process:
    """The `docker run` client of launch ``name``."""
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if cmdline[1:3] == ["run", "--rm"] and f"rigbook-{name}" in cmdline:
            return proc
    raise AssertionError(f"no docker client of {name} runs")


@pytest.mark.e2e
@pytest.mark.parametrize(
    "when",
    [
        # The container exists (Created, or starting): readiness is being waited for.
        "created",
        # The engine has loaded its model and listens: rigbook is in its last polls or the smoke test.
        "listening",
    ],
)
def test_ctrl_c_during_up_leaves_no_container(when, no_leftovers):
    name = f"docker-run-int-{when}"
    up = start_up(name)
    try:
        if when == "created":
            wait_for(lambda: container_listed(name), "the container")
        else:
            wait_for(lambda: "listening on" in engine_log(name), "the engine listening")
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode != 0, out  # interrupted, not LIVE
    assert containers() == [], out


@pytest.mark.e2e
def test_kill_9_of_rigbook_then_down_removes_the_container(no_leftovers):
    name = "docker-run-kill"
    up = start_up(name)
    try:
        wait_for(lambda: container_listed(name), "the container")
    finally:
        os.killpg(up.pid, signal.SIGKILL)
        up.wait()
    # docker's client runs on in its own session, and the container with it.
    assert container_listed(name)
    stopped = rigbook("down", name)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert containers() == []


@pytest.mark.e2e
@pytest.mark.parametrize("then", ["down", "up"])
def test_a_container_whose_launch_was_killed_whole_is_removed_by_down_or_the_next_up(
    then, no_leftovers
):
    name = f"docker-run-orphan-{then}"
    up = start_up(name)
    try:
        wait_for(lambda: container_listed(name), "the container")
        # rigbook and docker's client both killed: only the daemon knows the container now.
        client = docker_client(name)
    finally:
        os.killpg(up.pid, signal.SIGKILL)
        up.wait()
    client.kill()
    client.wait(10)
    assert container_listed(name)
    if then == "down":
        done = rigbook("down", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"rigbook-{name}" in done.stdout
    else:
        # The next `up` of the name removes the container before it starts its own (else docker
        # refuses the name as in use) and goes LIVE.
        done = rigbook(
            *("up", RECIPE, "--yes", "--allow", "network-host"),
            *("--port", str(free_port()), "--name", name, "--timeout", "240"),
            timeout=300,
        )
        try:
            assert done.returncode == 0 and "LIVE on port" in done.stdout, done.stdout + done.stderr
        finally:
            rigbook("down", name)
    assert containers() == [], done.stdout
