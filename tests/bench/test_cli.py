"""`rigbook bench` and `rigbook report` as a user runs them, on real sockets: through the CLI's entry
point in this process where what is tested is what a command prints, writes and exits with; as
real processes where it is a signal or a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from rigbook.bench.journal import rebuild
from rigbook.bench.result import load_result, verify_hash
from tests.bench.helpers import (
    bench_args,
    follows_from_records,
    recorded,
    served_as_recorded,
    start_bench,
    synthetic_server,
)
from tests.conftest import free_port
from tests.in_process import rigbook_here as rigbook


@pytest.fixture(scope="module")
def url():
    # 2,000 tok/s: a 400-token reply takes 0.2 s, and the 200 40-token requests a signal test
    # starts still run for seconds after its third.
    with synthetic_server("--rate 2000 --tokens-per-chunk 3 --stall-s 2") as base:
        yield base


def test_bench_counts_every_token_the_server_sent_at_400_tokens(url, tmp_path):
    httpx.post(url + "/_reset")
    out = tmp_path / "r.json"
    p = rigbook(
        *bench_args(url, out, "--concurrency 1,4 --max-tokens 400 --requests 4 --warmup 0 --json")
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["result"] == str(out) and Path(summary["journal"]).is_file()
    result = load_result(out)
    served = recorded(url)
    for cell, own in zip(result.cells, (served[:4], served[4:]), strict=True):
        assert cell.valid and cell.token_count_source == "server_continuous"
        served_as_recorded(cell, own)
        follows_from_records(cell)
    # A cell the client may have distorted (a loaded machine stalls it) is flagged, not published.
    assert [pp.concurrency for pp in result.perf_points] == [
        c.concurrency for c in result.cells if not c.client_bound
    ]
    assert result.conditions.rig is not None and result.conditions.profile.name == "seed"
    assert not result.telemetry.available and result.telemetry.reason


@pytest.mark.parametrize("model", ["synthetic-error", "synthetic-early-eos", "synthetic-stall"])
def test_failed_requests_exit_2_with_bench_invalid(url, tmp_path, model):
    out = tmp_path / "r.json"
    options = "--concurrency 1 --requests 3 --max-tokens 30 --warmup 0 --stall-timeout 0.5"
    p = rigbook(*bench_args(url, out, options, model=model))
    assert (
        p.returncode == 2 and "error[E_BENCH_INVALID]" in p.stderr and "Traceback" not in p.stderr
    )
    assert load_result(out).cells[0].valid is False


def test_bad_input_is_a_coded_error(url, tmp_path):
    p = rigbook("bench", url, "--model", "nope", "--out", str(tmp_path / "r.json"))
    assert p.returncode == 2 and "error[E_MODEL_ID]" in p.stderr and "synthetic" in p.stderr
    p = rigbook("bench", f"http://127.0.0.1:{free_port()}", "--out", str(tmp_path / "r.json"))
    assert p.returncode == 2 and "error[E_CONNECT]" in p.stderr
    for bad in ("1,x", "1,,2", "0", "100000"):
        p = rigbook("bench", url, "--concurrency", bad, "--json")
        assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "E_INPUT", bad
    p = rigbook("report", str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "error[E_RESULT_INVALID]" in p.stderr
    p = rigbook("bench", "notaurl", "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "E_INPUT"
    p = rigbook("bench", url, "--model", "synthetic", "--out", "/proc/no/r.json", "--json")
    assert (
        p.returncode == 2
        and json.loads(p.stdout)["error"]["code"] == "E_FILE"
        and "Traceback" not in p.stderr
    )


def test_a_base_url_with_v1_works(url, tmp_path):
    out = tmp_path / "r.json"
    p = rigbook(*bench_args(url + "/v1/", out, "--profile quick --concurrency 1"))
    assert p.returncode == 0, p.stderr
    assert load_result(out).conditions.url == url


def test_a_remote_endpoint_gets_no_local_rig_or_telemetry(url, tmp_path, monkeypatch):
    """This machine's GPUs say nothing about a server elsewhere: neither is recorded, and why is."""
    from typer.testing import CliRunner

    import rigbook.endpoint.local
    from rigbook.cli.app import app

    monkeypatch.setattr(rigbook.endpoint.local, "is_local", lambda u: False)
    out = tmp_path / "r.json"
    done = CliRunner().invoke(app, bench_args(url, out, "--profile quick --concurrency 1 --json"))
    assert done.exit_code == 0, done.output
    result = load_result(out)
    assert result.conditions.rig is None and "another host" in result.conditions.rig_unavailable
    assert not result.telemetry.available and "another host" in result.telemetry.reason


def _start_long_bench(url: str, out: Path) -> subprocess.Popen:
    proc = start_bench(url, out, "--concurrency 1 --requests 200 --max-tokens 40 --warmup 0")
    journal = out.with_name(out.stem + ".journal.jsonl")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count('"type":"request"') >= 3:
            return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("bench wrote no requests to its journal")


def test_sigterm_writes_the_result_cut_short_and_exits_non_zero(url, tmp_path):
    out = tmp_path / "r.json"
    proc = _start_long_bench(url, out)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "W_CUT_SHORT" in err
    result = load_result(out)
    assert result.conditions.cut_short and result.cells[0].cut_short and not result.cells[0].valid
    assert result.cells[0].metrics.requests_ok >= 3 and result.perf_points == []


def test_sigkill_leaves_a_journal_that_rebuilds(url, tmp_path):
    out = tmp_path / "r.json"
    proc = _start_long_bench(url, out)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert not out.exists()
    journal = out.with_name("r.journal.jsonl")
    result = rebuild(journal)
    assert result.conditions.cut_short and verify_hash(result)
    assert result.cells[0].metrics.requests_ok >= 3 and all(r.ok for r in result.cells[0].requests)
    p = rigbook("report", str(journal), "--out", str(tmp_path / "rep"), "--json")
    assert p.returncode == 0, p.stderr
    value = json.loads(p.stdout)
    assert (
        Path(value["rebuilt_result"]).is_file()
        and load_result(value["rebuilt_result"]).conditions.cut_short
    )
    assert all(Path(x).stat().st_size > 1000 for x in value["plots"])


def test_report_writes_plots_and_markdown_and_html(url, tmp_path):
    out = tmp_path / "r.json"
    p = rigbook(*bench_args(url, out, "--concurrency 1,2 --requests 2 --max-tokens 30 --warmup 1"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith(str(out))
    for fmt in ("md", "html"):
        p = rigbook("report", str(out), "--format", fmt, "--out", str(tmp_path / fmt), "--json")
        assert p.returncode == 0, p.stderr
        value = json.loads(p.stdout)
        text = Path(value["report"]).read_text()
        assert "aggregate tok/s" in text and "seed v2" in text and "rates.png" in text
        assert {Path(x).name for x in value["plots"]} == {
            "rates.png",
            "distribution.png",
            "throughput.png",
            "ttft.png",
        }


def test_default_out_is_under_rigbook_home(url, rigbook_home):
    p = rigbook(
        "bench",
        url,
        "--model",
        "synthetic",
        "--concurrency",
        "1",
        "--requests",
        "1",
        "--max-tokens",
        "10",
        "--warmup",
        "0",
        env={"RIGBOOK_HOME": str(rigbook_home)},
    )
    assert p.returncode == 0, p.stderr
    path = Path(p.stdout.strip().splitlines()[-1])
    assert (
        path.parent == rigbook_home / "results"
        and path.name.startswith("bench-")
        and path.is_file()
    )
