"""A docker daemon for the docker tests: the one that answers, or one the tests start and stop.

A user's machine keeps its own daemon; only this test set-up ever starts one, as root, with the
flags that leave the host's iptables and forwarding alone, and stops it by its PID after the run.
Where none answers and none can be started (not root, no dockerd), the docker tests are skipped
with the reason: reported as not run, never passed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DOCKERD_FLAGS = ["--iptables=false", "--ip-forward=false", "--bridge=none"]


def answers() -> bool:
    """The docker CLI reaches a daemon."""
    if shutil.which("docker") is None:
        return False
    done = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0


def _start(log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        daemon = subprocess.Popen(
            ["dockerd", *DOCKERD_FLAGS],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            pytest.fail(f"dockerd exited with {daemon.returncode}; its log: {log}")
        if answers():
            return daemon
        time.sleep(0.2)
    daemon.terminate()
    pytest.fail(f"dockerd did not answer within 60 s; its log: {log}")


def daemon(log_dir: Path) -> Iterator[None]:
    """Yield while a daemon answers; stop the one started here, and only that one."""
    if answers():
        yield
        return
    if shutil.which("dockerd") is None:
        pytest.skip(
            "docker tests not run: no daemon answers and dockerd is not installed (make system-deps)"
        )
    if os.geteuid() != 0:
        pytest.skip("docker tests not run: no daemon answers and only root may start one here")
    started = _start(log_dir / "dockerd.log")
    try:
        yield
    finally:
        started.terminate()
        try:
            started.wait(timeout=30)
        except subprocess.TimeoutExpired:
            started.kill()
            started.wait()
