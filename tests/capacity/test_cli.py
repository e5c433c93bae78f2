"""`rigbook capacity`, then `report` and `compare` on its results, as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rigbook.capacity.result import load_capacity
from rigbook_testkit.synthetic_curves import Curve
from tests.capacity.helpers import MAX_TOKENS, serve


def rigbook(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.run(
        [sys.executable, "-m", "rigbook", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.fixture(scope="module")
def cliff():
    # 200 tok/s a user up to 3 users, 40 past them: far from either SLO's bound on each side.
    proc, url = serve(Curve(shape="cliff", rate_tok_s=200, knee=3, drop=0.2))
    yield url
    proc.terminate()
    proc.wait(10)


def measure(url: str, out, slo: str) -> dict:
    done = rigbook(
        "capacity",
        url,
        "--slo",
        slo,
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
        "1",
        "--rounds",
        "2",
        "--min-requests",
        "5",
        "--out",
        str(out),
        "--json",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def test_capacity_report_and_compare(cliff, tmp_path):
    a = measure(cliff, tmp_path / "a.json", "per_user_tok_s>=80")
    assert a["answer"]["users"] == 3 and a["answer"]["first_fail_concurrency"] == 4
    assert (
        a["sentence"].startswith("This rig serves ")
        and "3 users at ≥ 80 tok/s each" in a["sentence"]
    )
    assert [p["concurrency"] for p in a["probes"]] == [1, 2, 4, 3, 3]
    point = a["perf_points"][0]
    assert point["users_at_slo"] == 3 and point["slo"] == a["slo"]
    assert point["slo_profile"] == "quick v2"

    report = rigbook("report", str(tmp_path / "a.json"), "--json")
    assert report.returncode == 0, report.stderr
    written = json.loads(report.stdout)
    assert any(p.endswith("capacity.png") for p in written["plots"])
    page = Path(written["report"]).read_text(encoding="utf-8")
    assert a["sentence"] in page and "![capacity](capacity.png)" in page
    assert os.path.getsize(next(p for p in written["plots"] if p.endswith("capacity.png"))) > 10_000

    shutil.copy(tmp_path / "a.json", tmp_path / "a2.json")
    same = rigbook("compare", str(tmp_path / "a.json"), str(tmp_path / "a2.json"), "--json")
    assert same.returncode == 0, same.stdout + same.stderr
    pair = json.loads(same.stdout)["pairs"][0]["points"][0]
    assert pair["slo"] == a["slo"] and pair["users_ratio_pct"] == pytest.approx(100.0)
    table = rigbook("compare", str(tmp_path / "a.json"), str(tmp_path / "a2.json"))
    assert "users at the SLO is 100.0%" in table.stdout

    b = measure(cliff, tmp_path / "b.json", "per_user_tok_s>=30")
    assert b["answer"]["users"] == 4 and b["answer"]["lower_bound"]
    other = rigbook("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json")
    assert other.returncode == 2
    error = json.loads(other.stdout)["error"]
    assert error["code"] == "E_NOT_COMPARABLE" and "same SLO" in error["message"]
    assert any("per_user_tok_s>=30" in d for d in error["details"])


@pytest.mark.parametrize(
    "args, code",
    [
        (["http://127.0.0.1:9", "--slo", "tok_s>=20"], "E_SLO_INVALID"),
        (["--slo", "per_user_tok_s>=20"], "E_INPUT"),
        (["http://127.0.0.1:9", "--slo", "per_user_tok_s>=20", "--warmup", "0"], "E_CONNECT"),
    ],
)
def test_bad_input_is_one_json_error(args, code):
    done = rigbook("capacity", *args, "--json")
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == code
    assert "Traceback" not in done.stderr


def test_a_signal_cuts_the_run_short_and_says_so(tmp_path):
    """SIGTERM (as Ctrl-C) once the first probe is written: exit 128 + 15, the file holds what was
    measured, and W_CUT_SHORT is in the printed summary and in the file."""
    proc, url = serve(Curve(shape="hyperbolic", rate_tok_s=120, falloff=1.0))
    out = tmp_path / "cut.json"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    run = subprocess.Popen(
        [
            *(sys.executable, "-m", "rigbook", "capacity", url, "--slo", "per_user_tok_s>=5"),
            *("--profile", "quick", "--model", "synthetic", "--max-tokens", str(MAX_TOKENS)),
            *("--warmup", "0", "--rounds", "6", "--out", str(out), "--json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert out.exists(), run.communicate(timeout=60)
        run.send_signal(signal.SIGTERM)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
        proc.terminate()
        proc.wait(10)
    assert run.returncode == 128 + signal.SIGTERM, stderr
    printed = json.loads(stdout)
    cut = [w["message"] for w in printed["warnings"] if w["code"] == "W_CUT_SHORT"]
    # The search's own line first (a signal inside a probe also leaves that probe's, numbered).
    assert cut and cut[0].startswith("stopped by a signal after ")
    assert "finished probe(s)" in cut[0]
    assert not printed["answer"]["complete"] and printed["answer"]["lower_bound"]
    result = load_capacity(out)
    assert [w.model_dump(mode="json") for w in result.warnings] == printed["warnings"]
    assert result.bench.conditions.cut_short
    assert result.probes[0].verdict == "pass"


def test_the_client_and_the_stall_limit_are_chosen_as_for_a_bench(cliff, tmp_path):
    out = tmp_path / "c.json"
    done = rigbook(
        *("capacity", cliff, "--slo", "per_user_tok_s>=80,ttft_p50_ms<=500"),
        *("--profile", "quick", "--model", "synthetic", "--max-tokens", str(MAX_TOKENS)),
        *("--warmup", "0", "--max-concurrency", "2", "--reruns", "0"),
        *("--client", "python", "--stall-timeout", "0.5", "--out", str(out), "--json"),
    )
    assert done.returncode == 0, done.stderr + done.stdout
    result = load_capacity(out)
    # The Python client stamps each event as it reads it: no kernel stamps in any cell.
    assert all(c.client is not None and c.client.timestamps is None for c in result.bench.cells)
    # The stall limit asked for is raised to twice the SLO's TTFT bound.
    assert result.bench.conditions.profile.overrides["stall_timeout_s"] == 1.0
    bad = rigbook("capacity", cliff, "--slo", "per_user_tok_s>=80", "--client", "fast", "--json")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
