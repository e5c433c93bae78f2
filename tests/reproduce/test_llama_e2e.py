"""`rigbook reproduce` of the embedded recipe against the real llama-server: the whole loop ends with a
verdict table and stops the engine; Ctrl-C (SIGINT) during the launch or the bench leaves no engine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from rigbook.recipe import EMBEDDED_SLUG
from tests.conftest import free_port
from tests.launch.helpers import rigbook

# Short replies, two requests a repeat, three repeats at most: a loaded two-core machine finishes.
QUICK = [
    "--profile",
    "quick",
    "--max-tokens",
    "8",
    "--concurrency",
    "1,2",
    "--requests",
    "2",
    "--max-repeats",
    "3",
]


def engines(port: int) -> list[psutil.Process]:
    """Live llama-server processes on ``port`` (other sessions may run their own on other ports)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if (
            p.info["status"] != psutil.STATUS_ZOMBIE
            and any("llama-server" in c for c in cmd[:1])
            and str(port) in cmd
        ):
            found.append(p)
    return found


def gone(port: int, within_s: float = 30) -> bool:
    deadline = time.monotonic() + within_s
    while engines(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not engines(port)


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_reproduce_the_embedded_recipe_ends_with_a_verdict_table(tmp_path: Path) -> None:
    port = free_port()
    out = tmp_path / "rep"
    done = rigbook(
        "reproduce",
        EMBEDDED_SLUG,
        "--yes",
        "--port",
        str(port),
        "--out",
        str(out),
        *QUICK,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"LIVE on port {port}" in done.stdout
    assert "claims against this rig" in done.stdout and "measured [95 % CI]" in done.stdout
    assert "cell concurrency 1: aggregate" in done.stdout
    assert "one request alone:" in done.stdout and "two at once:" in done.stdout
    assert f"stopped {EMBEDDED_SLUG}" in done.stderr
    assert gone(port)
    assert json.loads(rigbook("status", "--json").stdout) == []
    summary = json.loads((out / "reproduction.json").read_text())
    assert [r["call"] for r in summary["rows"]] == ["no claim", "no claim"]
    assert any("states no performance claim" in a for a in summary["assumed"])
    result = json.loads((out / "result.json").read_text())
    assert [lv["concurrency"] for lv in result["intervals"]] == [1, 2]
    assert all(lv["repeats"] >= 1 for lv in result["intervals"])
    assert (out / "report" / "report.md").is_file()


def _interrupted_at(tmp_path: Path, marker: str) -> tuple[int, str, int]:
    """Run reproduce, send SIGINT once ``marker`` shows on stderr; returns (exit code, stderr, port)."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rigbook",
            "reproduce",
            EMBEDDED_SLUG,
            "--yes",
            "--port",
            str(port),
            "--out",
            str(tmp_path / "rep"),
            *QUICK,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stderr is not None
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if marker in line:
                proc.send_signal(signal.SIGINT)
                break
        _, rest_err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, "".join(seen) + rest_err, port


@pytest.mark.e2e
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "marker",
    [
        "started pid",  # the engine runs and is not ready yet
        "bench: profile",  # LIVE and smoke-tested, the bench starting
        "concurrency 1",  # inside the first cell
    ],
)
def test_ctrl_c_at_each_stage_leaves_no_engine(tmp_path: Path, marker: str) -> None:
    code, err, port = _interrupted_at(tmp_path, marker)
    assert code in (1, 130, -signal.SIGINT), err
    assert "Traceback" not in err
    assert gone(port), f"llama-server still runs on port {port} after SIGINT at {marker!r}"
    assert json.loads(rigbook("status", "--json").stdout) == []
