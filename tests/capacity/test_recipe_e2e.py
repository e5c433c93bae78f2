"""`rigbook capacity --recipe SLUG` against the real llama-server of the embedded default recipe:
started (`up`) when not running and stopped after; a launch that ran before is measured and left
running. A loose SLO and one user keep each run short on a loaded two-core machine."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from rigbook.capacity.result import load_capacity
from rigbook.recipe import EMBEDDED_SLUG
from tests.conftest import free_port
from tests.launch.helpers import rigbook

# Met by one user even at a load of several times the cores (measured: 34 tok/s, TTFT 0.7 s).
SLO = "per_user_tok_s>=1,ttft_p90_ms<=60s"


def capacity(out: Path, *extra: str) -> dict:
    done = rigbook(
        "capacity",
        "--recipe",
        EMBEDDED_SLUG,
        "--slo",
        SLO,
        "--profile",
        "quick",
        "--max-tokens",
        "16",
        "--max-concurrency",
        "1",
        "--rounds",
        "1",
        "--min-requests",
        "3",
        "--reruns",
        "1",
        "--max-requests",
        "3",
        "--out",
        str(out),
        "--json",
        *extra,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def launches() -> list[dict]:
    return json.loads(rigbook("status", "--json").stdout)


def engines(port: int) -> list[psutil.Process]:
    """Live processes serving on ``port`` as llama-server (other sessions on this machine may run
    their own llama-servers: only the port tells this test's apart)."""
    found = []
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if (
            p.info["status"] != psutil.STATUS_ZOMBIE
            and any("llama-server" in c for c in cmd[:1])
            and str(port) in cmd
        ):
            found.append(p)
    return found


@pytest.mark.e2e
def test_capacity_starts_the_recipe_measures_and_stops_what_it_started(tmp_path):
    port = free_port()
    answer = capacity(tmp_path / "c.json", "--port", str(port))
    assert answer["answer"]["users"] == 1 and answer["answer"]["complete"]
    assert answer["sentence"].startswith("This rig serves at least 1 user at ≥ 1 tok/s each")
    # --min-requests: one round of one user is 1 request, raised to 3; the 29 a p90 asks for are
    # capped at 3 by --max-requests, and the answer says what that could miss.
    assert [(p["concurrency"], p["requests_planned"]) for p in answer["probes"]] == [
        (1, 3),
        (1, 3),
    ]
    assert "TTFT p90 judged on 3 requests at 1 user" in answer["sentence"]
    # Before the second probe, llama-server's own in-flight gauge was read (the recipe starts it
    # with its metrics on) and showed none left.
    drain = answer["probes"][1]["drain"]
    assert drain["source"] == "/metrics llamacpp:requests_processing+llamacpp:requests_deferred"
    assert drain["idle"] is True
    result = load_capacity(tmp_path / "c.json")
    # Measured on the port asked for, against the recipe's real engine.
    assert result.bench.conditions.url == f"http://127.0.0.1:{port}"
    assert result.bench.conditions.engine == "llama.cpp"
    assert result.bench.conditions.recipe_slug == EMBEDDED_SLUG
    assert all(p.requests_ok == 3 for p in result.probes)
    # What it started, it stopped: no launch recorded, no new llama-server left.
    assert launches() == []
    assert engines(port) == []


@pytest.mark.e2e
def test_capacity_leaves_a_launch_that_was_running_before(tmp_path):
    port = free_port()
    up = rigbook("up", "--yes", "--port", str(port), "--name", "pre", "--timeout", "180")
    assert up.returncode == 0, up.stderr + up.stdout
    try:
        pid = launches()[0]["pid"]
        answer = capacity(tmp_path / "c.json")
        assert answer["answer"]["users"] == 1
        assert load_capacity(tmp_path / "c.json").bench.conditions.url == (
            f"http://127.0.0.1:{port}"
        )
        runs = launches()
        assert [(r["name"], r["port"], r["healthy"]) for r in runs] == [("pre", port, True)]
        assert runs[0]["pid"] == pid and psutil.pid_exists(pid)
        # The launch's process is the sandbox's wrapper; the engine is the one it started.
        launched = psutil.Process(pid)
        ours = {pid} | {c.pid for c in launched.children(recursive=True)}
        serving = engines(port)
        assert len(serving) == 1 and serving[0].pid in ours
    finally:
        down = rigbook("down", "pre", "--json")
    assert down.returncode == 0, down.stderr
    assert launches() == []
