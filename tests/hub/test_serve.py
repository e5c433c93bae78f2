"""`rigbook hub serve --workers N` leaves nothing behind when its parent dies, even by kill -9."""

from __future__ import annotations

import os
import signal

import psutil

from rigbook.ports import bind_error
from tests.conftest import free_port
from tests.hub.helpers import served_workers


def test_workers_exit_when_the_parent_is_killed(tmp_path):
    port = free_port()
    children: list[psutil.Process] = []
    with served_workers(f"sqlite:///{tmp_path / 'hub.sqlite3'}", port) as proc:
        try:
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
