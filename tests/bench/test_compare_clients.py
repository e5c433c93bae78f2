"""benchmarks/scripts/client/compare_clients.py never hides a peer's failure: a client that exits non-zero
shows its cause in the faults column and its stderr's last lines in the raw output, a GuideLLM result
that leaves requests out is flagged, and a failed cell is run once more with the first failure kept.

The peers here are stand-ins (a script named ``bin/guidellm`` in a folder standing for the peers
venv) against a real synthetic server; the real GuideLLM is not needed."""

from __future__ import annotations

import importlib.util
import json
import sys
from argparse import Namespace
from functools import partial
from pathlib import Path

import pytest

from rigbook.findings import Finding

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "compare_clients", ROOT / "benchmarks" / "scripts" / "client" / "compare_clients.py"
)
cc = importlib.util.module_from_spec(_spec)
sys.modules["compare_clients"] = cc  # dataclasses look their module up there
_spec.loader.exec_module(cc)

# What GuideLLM 0.8.1 wrote when it lost its one request's last update (abridged).
LOST_UPDATE = """\
26-12-05 07:29:16|INFO     |guidellm.benchmark.progress:_log_update:420 - Benchmark 1 \
(concurrent@1): compile | elapsed=20.2s | successful=0 errored=0 incomplete=0
Traceback (most recent call last):
  File "guidellm/benchmark/schemas/metrics.py", line 1250, in compile
    raise ValueError(
    ^^^^^^^^^^^^^^^^^
ValueError: Cannot compile GenerativeMetrics: No measurement start or end times available.
"""


def _result(total: int, rate: float = 40.0) -> dict:
    """The parts of a GuideLLM JSON result that compare_clients reads."""
    return {
        "benchmarks": [
            {
                "metrics": {
                    "output_tokens_per_second": {"successful": {"mean": rate}},
                    "request_totals": {"total": total},
                },
                "warnings": [],
                "requests": {"errored": [], "incomplete": []},
            }
        ]
    }


def _fake_peers(tmp_path: Path, fails: int, stderr: str = LOST_UPDATE) -> Path:
    """A peers venv whose ``guidellm`` fails its first ``fails`` runs (``stderr``, exit 1), then
    writes a one-request result where ``--output`` says."""
    venv = tmp_path / "peers"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "guidellm"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        "args = sys.argv[1:]\n"
        "out = args[args.index('--output') + 1].split('path=', 1)[1]\n"
        "tries = pathlib.Path(__file__).with_name('tries')\n"
        "n = int(tries.read_text()) if tries.exists() else 0\n"
        "tries.write_text(str(n + 1))\n"
        f"if n < {fails}:\n"
        f"    sys.stderr.write({stderr!r})\n"
        "    sys.exit(1)\n"
        f"pathlib.Path(out).write_text({json.dumps(json.dumps(_result(1)))})\n"
    )
    script.chmod(0o755)
    return venv


def _args(venv: Path) -> Namespace:
    return Namespace(peers_venv=venv, tokenizer="unused")


def test_a_peer_that_exits_1_says_why(tmp_path):
    run = cc.measure_point("guidellm", 1000, 1, 5, _args(_fake_peers(tmp_path, 1)), tmp_path, {})
    assert run.failed and run.reported_tok_s is None
    assert run.faults == (
        "exit 1: GuideLLM lost its last request's final update (its own race; docs/bench.md)"
    )
    assert run.stderr_tail[-1].startswith("ValueError: Cannot compile GenerativeMetrics")
    assert run.stderr_tail[-2] == "    raise ValueError("  # the ^^^ marks left out
    text = cc.table([run], ["0.1, 0.1, 0.1"], [])
    assert "| exit 1: GuideLLM lost" in text
    # The stderr's last lines follow the table, its log lines' bars kept out of the table.
    assert "guidellm at 1000 tok/s × 1, exit 1: GuideLLM lost" in text
    assert "ValueError: Cannot compile GenerativeMetrics" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| guidellm"))
    assert row.count("|") == 10


def test_a_failed_cell_runs_once_more_and_keeps_the_first_failure(tmp_path, capsys):
    venv = _fake_peers(tmp_path, 1)
    run = cc.measure_once_more(
        partial(cc.measure_point, "guidellm", 1000, 1, 5, _args(venv), tmp_path, {})
    )
    assert not run.failed and run.reported_tok_s == 40.0
    assert run.faults == (
        "retried after exit 1: GuideLLM lost its last request's final update "
        "(its own race; docs/bench.md)"
    )
    assert run.stderr_tail[-1].startswith("ValueError: Cannot compile")
    raw = capsys.readouterr().out
    assert "failed, run once more" in raw
    assert "guidellm stderr: ValueError: Cannot compile GenerativeMetrics" in raw


def test_a_cell_that_fails_twice_says_so_twice(tmp_path):
    stderr = "Traceback (most recent call last):\nRuntimeError: worker died\n"
    venv = _fake_peers(tmp_path, 2, stderr)
    run = cc.measure_once_more(
        partial(cc.measure_point, "guidellm", 1000, 1, 5, _args(venv), tmp_path, {})
    )
    assert run.failed
    assert run.faults == "twice: exit 1: RuntimeError: worker died"


def test_a_failed_run_never_reads_an_earlier_runs_result(tmp_path):
    """The start-up runs share one result file's name: a failed run must not read the last one's."""
    (tmp_path / "guidellm-1000-1.json").write_text(json.dumps(_result(1)))
    run = cc.measure_point("guidellm", 1000, 1, 1, _args(_fake_peers(tmp_path, 9)), tmp_path, {})
    assert run.failed and run.reported_tok_s is None


def test_guidellm_result_that_leaves_requests_out_is_flagged(tmp_path):
    out = tmp_path / "g.json"
    out.write_text(json.dumps(_result(3)))
    assert cc.guidellm_read(out, 4) == (40.0, "1 of 4 requests missing from its result")
    assert cc.guidellm_read(out, 3) == (40.0, "")


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (
            "log line\nTraceback (most recent call last):\n  x\nhttpx.ReadTimeout: timed out\n",
            "httpx.ReadTimeout: timed out",
        ),
        ("Error: no such option: --bogus\n\n", "Error: no such option: --bogus"),
        ("just a last line\n", "just a last line"),
        ("", ""),
    ],
)
def test_failure_cause(text, cause):
    assert cc.failure_cause(text) == cause


def test_a_client_past_its_time_is_killed_and_says_so():
    done, _ = cc.run_child([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert done.returncode == -9
    assert cc.failure_cause(done.stderr) == "killed: timed out after 0.5 s"


def _start_up_runs(exit_codes: list[int]):
    """A stand-in for one start-up measurement per call: each exits with the next code, reports
    no rate (one token has none) and used 0.5 s of CPU more than the one before."""
    calls: list[int] = []

    def measure():
        code = exit_codes[len(calls)]
        calls.append(code)
        return cc.Run(
            tool="llama-benchy",
            rate=1000,
            streams=1,
            cpu_s=0.5 * len(calls),
            failed=True,
            exit_code=code,
            faults=f"exit {code}" if code else "",
        )

    return measure, calls


def test_a_start_up_run_without_a_rate_is_not_run_again(capsys):
    """llama-benchy reports no rate for one token; its start-up runs succeeded all the same."""
    measure, calls = _start_up_runs([0, 0, 0, 0])
    startup = cc.startup_cost(measure)
    assert len(calls) == 4 and "failed" not in capsys.readouterr().out
    assert startup.median == pytest.approx(1.5) and startup.spread == pytest.approx(1.0)


def test_a_start_up_run_that_fails_twice_stops_the_comparison():
    measure, calls = _start_up_runs([0, 1, 1])
    with pytest.raises(SystemExit, match="start-up run failed twice"):
        cc.startup_cost(measure)
    assert calls == [0, 1, 1]


def test_a_flagged_rigbook_cell_says_why_in_the_raw_output(tmp_path, capsys):
    """The rigbook result lives in a temporary folder; the reason it was flagged must outlive it."""
    reason = "a read held several events of one stream, the earlier ones stamped up to 4.0 ms late"
    cell = {"client_bound": True, "client": {"reason": reason}, "metrics": {"aggregate_tok_s": 9.0}}
    warning = Finding.make("W_CLIENT_BOUND", "cell 0").model_dump(mode="json")
    summary = {"cells": [cell], "warnings": [warning]}
    done = cc.subprocess.CompletedProcess([], 0, stdout=json.dumps(summary), stderr="")
    assert cc.rigbook_read(done, tmp_path / "r.json") == (9.0, "W_CLIENT_BOUND")
    assert f"rigbook client_bound: {reason}" in capsys.readouterr().out


def test_rounds_give_each_peer_a_ratio_per_round_and_of_the_medians():
    def run(tool: str, us: float) -> object:
        return cc.Run(tool=tool, rate=40, streams=64, server_tokens=1e6, cpu_s=us)

    runs = [run("rigbook", 10.0), run("llama-benchy", 40.0), run("rigbook", 8.0)]
    runs += [run("llama-benchy", 36.0), run("rigbook", 9.0), run("llama-benchy", 27.0)]
    (line,) = cc.cost_ratios(runs)
    assert "3 rounds: rigbook 9.0 µs/token, llama-benchy 36.0 (4.00x of the medians)" in line
    assert "each round 4.00x, 4.50x, 3.00x, median 4.00x" in line
    assert cc.cost_ratios(runs[:2]) == []  # measured once: no spread to give


def test_the_peers_run_from_the_repository_root():
    # The script lives under benchmarks/scripts/client/; its peers import rigbook from the root.
    assert cc.REPO == ROOT
