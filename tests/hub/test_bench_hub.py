"""The hub benchmarks' own parts: the load client survives a server closing an idle kept-alive
connection, and `bench_hub.py` runs end to end on a tiny hub and prints its table."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


def load_module():
    spec = importlib.util.spec_from_file_location("hub_load", ROOT / "benchmarks/hub/load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_load_client_does_not_send_on_a_connection_the_server_closed_idle(tmp_path):
    """uvicorn closes a kept-alive connection idle past its keep-alive timeout; a request sent on it
    ended in IncompleteReadError, counted as the server's error."""
    load = load_module()
    answers = tmp_path / "answers.pickle"
    answers.write_bytes(pickle.dumps({"/x": ("text/plain", b"hello")}))
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "benchmarks.hub.baseline:app",
            "--port",
            str(port),
            "--timeout-keep-alive",
            "1",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=os.environ | {"RIGBOOK_BASELINE_ANSWERS": str(answers)},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/x", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)

        async def twice() -> list[int]:
            pool: list = []
            first = await load.fetch("127.0.0.1", port, pool, "/x")
            await asyncio.sleep(
                2.5
            )  # past the server's keep-alive timeout: it closed the connection
            return [first, await load.fetch("127.0.0.1", port, pool, "/x")]

        assert asyncio.run(twice()) == [200, 200]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_bench_hub_runs_and_prints_its_table(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/hub/bench_hub.py",
            "--db",
            "sqlite",
            "--recipes",
            "12",
            "--results",
            "24",
            "--paths",
            "4",
            "--seconds",
            "0.5",
            "--rate",
            "10",
            "--p99-ms",
            "10",
            "--p99-ms",
            "60000",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| sqlite |")]
    assert [r.split("|")[2].strip() for r in rows] == [
        "recipe JSON",
        "recipe page",
        "leaderboard JSON",
    ]
    # at a bound nothing misses, both held the one rate: the ratio is 1
    assert all(r.split("|")[6].strip() == "10" and r.split("|")[8].strip() == "1.00" for r in rows)
    assert "every ratio at p99 <= 10 ms >= 0.5:" in done.stdout
    assert "one publish on sqlite (a recipe revision, written and rendered" in done.stdout
    # A run folder as benchmarks/runs keeps them: scripts/benchmarks_index.py reads it.
    from scripts.benchmarks_index import RunManifest

    manifest = RunManifest.model_validate_json((out / "run.json").read_text())
    assert set(manifest.file_map()) == {p.name for p in out.iterdir()} - {"run.json"}
    assert "cores" in manifest.machine
    assert manifest.load_before is not None and len(manifest.load_before.split()) == 3
    assert {r["server"] for r in json.loads((out / "rows.json").read_text())} == {
        "hub",
        "baseline",
    }
