"""The supervisor with real processes: coded failures from the log, nothing left behind."""

import socket
import sys

import pytest

from rigbook.errors import LaunchError, RigbookError
from rigbook.launch.engines import engine_for
from rigbook.launch.plan import LaunchCommand
from rigbook.launch.planner import build_plan
from rigbook.launch.supervisor import group_members, start, stop_group, wait_ready
from rigbook.recipe import EMBEDDED_SLUG, get_recipe
from tests.conftest import free_port


@pytest.mark.e2e
def test_llama_cpp_on_a_taken_port_fails_with_e_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        plan = build_plan(get_recipe(EMBEDDED_SLUG), port=port, models_dir=tmp_path)
        log = tmp_path / "engine.log"
        proc = start(plan.command, log)
        try:
            with pytest.raises(RigbookError) as caught:
                wait_ready(
                    proc,
                    f"http://127.0.0.1:{free_port()}",
                    log,
                    timeout=120,
                    patterns=engine_for(plan.kind).log_patterns,
                )
        finally:
            stop_group(proc.pid, child=proc)
    # llama-server's own line for a taken port, read from its log.
    assert caught.value.code == "E_PORT" and "couldn't bind" in caught.value.message


def test_an_engine_that_never_answers_is_e_not_ready_and_its_whole_group_is_killed(tmp_path):
    # A parent that starts a grandchild: both must go.
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); time.sleep(300)"
    proc = start(LaunchCommand(argv=[sys.executable, "-c", script]), tmp_path / "log")
    with pytest.raises(LaunchError) as caught:
        wait_ready(proc, f"http://127.0.0.1:{free_port()}", tmp_path / "log", timeout=1.5)
    assert caught.value.code == "E_NOT_READY"
    assert len(group_members(proc.pid)) == 2
    assert stop_group(proc.pid, grace_s=5, child=proc)
    assert group_members(proc.pid) == []


def test_an_engine_that_exits_reports_its_first_error_line(tmp_path):
    script = "import sys; print('INFO starting'); print('ValueError: unknown quantization nvfp5', flush=True); sys.exit(3)"
    proc = start(LaunchCommand(argv=[sys.executable, "-c", script]), tmp_path / "log")
    with pytest.raises(LaunchError) as caught:
        wait_ready(proc, f"http://127.0.0.1:{free_port()}", tmp_path / "log", timeout=30)
    assert caught.value.code == "E_ENGINE_EXIT"
    assert (
        "status 3" in caught.value.message
        and "ValueError: unknown quantization nvfp5" in caught.value.message
    )


def test_a_missing_engine_program_is_e_engine_missing(tmp_path):
    with pytest.raises(LaunchError) as caught:
        start(LaunchCommand(argv=["no-such-engine-binary"]), tmp_path / "log")
    assert caught.value.code == "E_ENGINE_MISSING"
