"""Real docker failures, each provoked for real against the daemon, map to their codes with a
remedy, and leave no container behind."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.docker.conftest import RECIPE, containers, docker_recipe
from tests.launch.helpers import RIG_2X, rigbook

# Each runs the real daemon, and most the real engine in its container.
pytestmark = pytest.mark.e2e


def up(recipe: str | Path, name: str, *more: str, env=None) -> dict:
    done = rigbook(
        "up",
        str(recipe),
        "--yes",
        "--allow",
        "network-host",
        "--name",
        name,
        "--timeout",
        "240",
        "--json",
        *more,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["remedy"], error
    return error


def test_an_image_not_here_with_pull_never_is_e_docker_image(tmp_path, no_leftovers):
    path = docker_recipe(
        tmp_path, "absent", image="rigbook/docker-run-absent:none", args=["--pull", "never"]
    )
    error = up(path, "docker-run-absent", "--port", str(free_port()))
    assert error["code"] == "E_DOCKER_IMAGE", error
    assert "No such image" in error["message"] and "docker pull" in error["remedy"]


def test_a_daemon_that_does_not_run_is_e_docker_before_anything_starts(tmp_path, no_leftovers):
    dead = tmp_path / "dead.sock"
    error = up(
        RECIPE,
        "docker-run-dead",
        "--port",
        str(free_port()),
        env={"DOCKER_HOST": f"unix://{dead}"},
    )
    assert error["code"] == "E_DOCKER" and "Cannot connect" in error["message"], error
    assert "`docker info` works for your user" in error["remedy"]


def test_a_socket_that_refuses_the_user_is_e_docker_denied(tmp_path, no_leftovers):
    # Root passes any socket's mode; in a user namespace of its own (no uid mapped) it does not,
    # so a socket with mode 000 refuses it as docker's socket refuses a user outside its group.
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    path = tmp_path / "refusing.sock"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(path))
        listening.listen()
        path.chmod(0)
        done = subprocess.run(
            [
                *("unshare", "--user", sys.executable, "-m", "rigbook", "up", RECIPE, "--yes"),
                *("--allow", "network-host", "--port", str(free_port())),
                *("--name", "docker-run-denied", "--json"),
            ],
            env={**os.environ, "DOCKER_HOST": f"unix://{path}"},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_DOCKER_DENIED" and "permission denied" in error["message"], error
    assert "`docker` group is root-equivalent" in error["remedy"]


def test_a_taken_port_is_e_port(no_leftovers):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        error = up(RECIPE, "docker-run-port", "--port", str(port))
    assert error["code"] == "E_PORT", error
    assert containers() == []


def test_a_container_that_exits_at_once_maps_its_log_line(tmp_path, no_leftovers):
    # The same llama-server line as a native launch: the model file is not there.
    path = docker_recipe(tmp_path, "exits", MODEL="no-such-model")
    error = up(path, "docker-run-exits", "--port", str(free_port()))
    assert error["code"] == "E_FILE", error
    assert "failed to open GGUF file" in error["message"]


def test_gpus_on_a_host_without_the_nvidia_runtime_is_e_toolkit(tmp_path, no_leftovers):
    # The fixture rig has GPUs, this host does not: docker accepts `--gpus` and fails to start it
    # (exit 125); the container it created is gone too.
    path = docker_recipe(tmp_path, "gpus", gpus=1)
    error = up(
        path, "docker-run-gpus", "--rig", str(RIG_2X), "--gpus", "0", "--port", str(free_port())
    )
    assert error["code"] == "E_TOOLKIT", error
    assert "could not select device driver" in error["message"]
    assert "nvidia-ctk" in error["remedy"]


def test_another_runtime_is_refused_before_docker_sees_it(tmp_path, no_leftovers):
    # rigbook's rules refuse `--runtime` (it reaches GPUs outside `--gpus` and its locks), so
    # docker's own "Unknown runtime specified" is never reached.
    path = docker_recipe(tmp_path, "runtime", args=["--runtime", "nvidia"])
    error = up(path, "docker-run-runtime", "--port", str(free_port()))
    assert error["code"] == "E_UNSAFE" and "--runtime" in error["message"], error
