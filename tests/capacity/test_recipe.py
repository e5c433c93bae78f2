"""`--recipe SLUG`: a launch that already runs is measured and left running; one that does not is
started with --port and --models-dir as asked and stopped after (the real engine:
test_recipe_e2e.py); --port and --models-dir without --recipe, or with a URL, are refused."""

from __future__ import annotations

import json
from types import SimpleNamespace

import psutil
import pytest
from typer.testing import CliRunner

from rigbook.capacity.serve import serving
from rigbook.cli.app import app as cli
from rigbook.launch import state
from rigbook.recipe import EMBEDDED_SLUG
from rigbook_testkit.synthetic_curves import Curve
from tests.capacity.helpers import MAX_TOKENS, serve
from tests.capacity.test_cli import rigbook


def test_a_running_launch_is_measured_and_left_running(rigbook_home, tmp_path):
    proc, url = serve(Curve(shape="cliff", rate_tok_s=200, knee=2, drop=0.2))
    try:
        # The synthetic server stands in for the recipe's engine, recorded as its running launch.
        state.save(
            state.RunState(
                name="capacity-test",
                recipe=EMBEDDED_SLUG,
                kind="llama_cpp",
                pid=proc.pid,
                pgid=proc.pid,
                create_time=psutil.Process(proc.pid).create_time(),
                started_at=state.now_iso(),
                url=url,
                port=int(url.rsplit(":", 1)[1]),
                model_id="synthetic",
                slot=[],
                log=str(tmp_path / "log"),
                argv=[],
            )
        )
        with serving(None, EMBEDDED_SLUG) as served:
            assert served.url == url and served.started is None
            assert served.recipe == EMBEDDED_SLUG
        # --port names where to start it; it already runs elsewhere, which is said and used.
        notes: list[str] = []
        running_port = int(url.rsplit(":", 1)[1])
        with serving(None, EMBEDDED_SLUG, note=notes.append, port=running_port + 1) as served:
            assert served.url == url and served.started is None
        assert notes[0] == (
            f"--port {running_port + 1} not used: the recipe already runs on port {running_port}"
        )
        done = rigbook(
            "capacity",
            "--recipe",
            EMBEDDED_SLUG,
            "--slo",
            "per_user_tok_s>=80",
            "--profile",
            "quick",
            "--model",
            "synthetic",
            "--max-tokens",
            str(MAX_TOKENS),
            "--warmup",
            "0",
            "--max-concurrency",
            "4",
            "--reruns",
            "0",
            "--out",
            str(tmp_path / "c.json"),
            "--json",
        )
        assert done.returncode == 0, done.stderr
        assert '"users": 2' in done.stdout
        assert proc.poll() is None and state.load("capacity-test") is not None
    finally:
        proc.terminate()
        proc.wait(10)


def test_port_models_dir_and_min_requests_reach_the_launch_and_the_probes(tmp_path, monkeypatch):
    """The recipe does not run: it is planned with --port and --models-dir as `rigbook up` would
    be, measured (probes of at least --min-requests), and stopped by name after. The engine is the
    synthetic server, handed back as what the launch started."""
    import rigbook.launch.control
    import rigbook.launch.planner
    import rigbook.launch.run

    proc, url = serve(Curve(shape="cliff", rate_tok_s=200, knee=2, drop=0.2))
    planned: list[dict] = []
    stopped: list[str] = []

    def build_plan(recipe, **kwargs):
        planned.append({"slug": recipe.slug, **kwargs})
        return SimpleNamespace(command=None)

    def run_plan(plan, *, confirm, progress, timeout):
        assert confirm(plan)
        return SimpleNamespace(url=url, run=SimpleNamespace(name="started-here"))

    monkeypatch.setattr(rigbook.launch.planner, "build_plan", build_plan)
    monkeypatch.setattr(rigbook.launch.run, "run_plan", run_plan)
    monkeypatch.setattr(rigbook.launch.control, "down", stopped.append)
    models = tmp_path / "models"
    try:
        done = CliRunner().invoke(
            cli,
            [
                *("capacity", "--recipe", EMBEDDED_SLUG, "--slo", "per_user_tok_s>=80"),
                *("--port", "18555", "--models-dir", str(models), "--min-requests", "5"),
                *("--rounds", "1", "--max-concurrency", "4", "--reruns", "0"),
                *("--profile", "quick", "--model", "synthetic", "--max-tokens", str(MAX_TOKENS)),
                *("--warmup", "0", "--out", str(tmp_path / "c.json"), "--json"),
            ],
        )
    finally:
        proc.terminate()
        proc.wait(10)
    assert done.exit_code == 0, done.output
    assert [
        (p["slug"], p["port"], p["models_dir"], p["dry_run"], p["rig"] is not None) for p in planned
    ] == [(EMBEDDED_SLUG, 18555, models, False, True)]
    assert stopped == ["started-here"]
    answer = json.loads(done.stdout)
    assert answer["answer"]["users"] == 2
    # One round per user: 1, 2 and 4 requests, each raised to --min-requests 5 (3 at 3 users).
    assert [(p["concurrency"], p["requests_planned"]) for p in answer["probes"]] == [
        (1, 5),
        (2, 5),
        (4, 5),
        (3, 5),
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["http://127.0.0.1:9", "--port", "18556"],
        ["http://127.0.0.1:9", "--models-dir", "/tmp"],
        ["http://127.0.0.1:9", "--recipe", EMBEDDED_SLUG, "--port", "18556"],
    ],
)
def test_port_and_models_dir_go_with_recipe_and_no_url(args):
    done = rigbook("capacity", *args, "--slo", "per_user_tok_s>=20", "--json")
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_INPUT" and "it goes with --recipe and no URL" in error["message"]


def test_min_requests_is_at_least_one():
    done = rigbook(
        "capacity", "http://127.0.0.1:9", "--slo", "per_user_tok_s>=20", "--min-requests", "0"
    )
    assert done.returncode == 2 and "--min-requests" in done.stderr
