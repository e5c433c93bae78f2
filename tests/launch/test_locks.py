import subprocess
import sys

import pytest

from rigbook.errors import LaunchError
from rigbook.launch import locks


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_second_launch_on_the_same_gpus_is_refused_with_the_holder(sleeper):
    locks.acquire(["gpu-0", "gpu-1"], "first", sleeper.pid)
    with pytest.raises(LaunchError) as caught:
        locks.acquire(["gpu-1", "gpu-2"], "second", 12345)
    err = caught.value
    assert err.code == "E_LOCKED"
    assert (
        "gpu-1" in err.message
        and "'first'" in err.message
        and f"pid {sleeper.pid}" in err.message
        and "since" in err.message
    )
    locks.acquire(["gpu-2"], "second", sleeper.pid)  # other GPUs are free


def test_a_lock_whose_process_is_gone_is_taken_over(sleeper):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    locks.acquire(["cpu"], "old", dead.pid)
    assert locks.holder("cpu") is None
    locks.acquire(["cpu"], "new", sleeper.pid)
    assert locks.holder("cpu").name == "new"
