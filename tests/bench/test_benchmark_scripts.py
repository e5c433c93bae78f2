"""The benchmark scripts in benchmarks/scripts/client/ run: each answers --help, and the two quick ones
measure a tiny load end to end against a real synthetic server."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "benchmarks" / "scripts" / "client").glob("*.py"))


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_script_answers_help(script):
    done = _run(script, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_hot_path_prints_a_cost_for_every_step():
    done = _run(
        ROOT / "benchmarks/scripts/client/hot_path.py",
        "--streams",
        "2",
        "--tokens",
        "20",
        "--rate",
        "200",
        "--repeat",
        "1",
    )
    assert done.returncode == 0, done.stderr
    steps = re.findall(r"^(\S+)\s+([\d.]+) µs/token", done.stdout, re.M)
    names = ["read", "timestamp", "http", "sse", "json", "rigbook", "rigbook+monitor"]
    # the C reader's steps need a compiler; the machines that build llama.cpp have one
    names = (["c-read", "c-parse"] if shutil.which("cc") or shutil.which("gcc") else []) + names
    assert [name for name, _ in steps] == names, done.stdout
    assert all(float(us) > 0 for _, us in steps)


def test_tick_cost_prints_a_cost_for_every_way_to_wake():
    done = _run(
        ROOT / "benchmarks/scripts/client/tick_cost.py", "--period-ms", "1", "--wakes", "50"
    )
    assert done.returncode == 0, done.stderr
    costs = re.findall(r"^(.+?)\s+([\d.]+) µs of CPU per wake", done.stdout, re.M)
    names = ["uvloop timer", "asyncio timer", "thread sleep", "ClientMonitor"]
    assert [name for name, _ in costs] == names, done.stdout
    assert all(float(us) > 0 for _, us in costs)


def test_paced_poll_reads_exact_rates():
    done = _run(
        ROOT / "benchmarks/scripts/client/paced_poll.py",
        "--streams",
        "2",
        "--tokens",
        "20",
        "--rate",
        "100",
    )
    assert done.returncode == 0, done.stderr
    error = re.search(r"worst per-stream rate error ([\d.]+)%", done.stdout)
    assert error and float(error.group(1)) < 1.0, done.stdout


SMALL = ("--levels", "2", "--tokens", "40", "--rate", "50")


@pytest.mark.parametrize("client", ["compiled", "python"])
def test_selfbench_prints_the_judged_stall_of_either_client(client):
    """`make bench-client` measured only the Python client's ticker stall; the compiled client
    has none, and the table's stall column holds what its cells were judged on."""
    done = subprocess.run(
        [sys.executable, "-m", "rigbook_testkit.selfbench", *SMALL, "--client", client],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    # 1: no level within 1 % unflagged, which a loaded machine may cause; a crash is a traceback
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    stamps = "kernel" if client == "compiled" else "loop"
    assert f"{stamps} timestamps" in done.stdout
    assert "ceiling" in done.stdout
