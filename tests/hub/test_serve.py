"""`rigbook hub serve --workers N` leaves nothing behind when its parent dies, even by kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import psutil

from rigbook.ports import bind_error
from tests.conftest import free_port


def test_workers_exit_when_the_parent_is_killed(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rigbook",
            "hub",
            "serve",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{tmp_path / 'hub.sqlite3'}",
            "--workers",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stdout.read().decode()
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/v1/recipes", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "hub serve did not answer in 90 s"
                time.sleep(0.3)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        _gone, alive = psutil.wait_procs(children, timeout=60)
        assert alive == [], [p.pid for p in alive]
        assert bind_error("127.0.0.1", port) is None
    finally:
        for child in children:
            if child.is_running():
                child.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
