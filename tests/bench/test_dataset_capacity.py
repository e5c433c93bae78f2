"""`rigbook capacity` and `rigbook reproduce` take a workload: each probe (each bench) runs it and
names it; a trace, which sets its own load, is refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbook.bench.result import load_result
from rigbook.capacity.result import load_capacity
from tests.bench.helpers import rigbook, synthetic_server
from tests.reproduce.test_synthetic import truth_recipe


@pytest.fixture(scope="module")
def url():
    with synthetic_server("--rate 400 --falloff 0") as u:
        yield u


@pytest.fixture
def sharegpt(tmp_path: Path) -> Path:
    rows = [
        {"conversations": [{"from": "human", "value": f"tell me about item {i} " * 3}]}
        for i in range(20)
    ]
    file = tmp_path / "sg.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return file


def test_capacity_asks_its_question_of_a_dataset_workload(url, sharegpt, tmp_path):
    out = tmp_path / "c.json"
    done = rigbook(
        *("capacity", url, "--slo", "per_user_tok_s>=100", "--profile", "quick"),
        *("--model", "synthetic", "--max-tokens", "32", "--warmup", "0", "--max-concurrency", "2"),
        *("--reruns", "0", "--rounds", "1", "--min-requests", "2"),
        *("--workload", f"dataset:{sharegpt}", "--dataset-size", "5", "--seed", "2"),
        *("--out", str(out), "--json"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = load_capacity(out)
    named = result.bench.conditions.workload
    assert named is not None and named.kind == "dataset" and named.name == "dataset:sg.jsonl"
    # Every probe ran it: each probe's own bench result names the same workload.
    probes = sorted((tmp_path / "c-probes").glob("probe-*.json"))
    assert probes
    for probe in probes:
        if probe.name.endswith(".journal.jsonl"):
            continue
        assert load_result(probe).conditions.workload == named


def test_capacity_and_reproduce_refuse_a_trace(url, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("at_s,input_tokens,output_tokens\n0,10,4\n")
    done = rigbook(
        *("capacity", url, "--slo", "per_user_tok_s>=100", "--workload", f"trace:{trace}"),
        "--json",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    err = json.loads(done.stdout)["error"]
    assert err["code"] == "E_INPUT" and "a trace sets its own load" in err["message"]
    recipe = truth_recipe(tmp_path, url, [400.0])
    done = rigbook("reproduce", str(recipe), "--workload", f"trace:{trace}", "--dry-run", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["error"]["code"] == "E_INPUT"


def test_reproduce_benches_the_workload_and_names_it(url, sharegpt, tmp_path):
    recipe = truth_recipe(tmp_path, url, [400.0])
    done = rigbook(
        *("reproduce", str(recipe), "--yes", "--profile", "quick", "--max-tokens", "32"),
        *("--workload", f"dataset:{sharegpt}", "--dataset-size", "4"),
        *("--requests", "2", "--max-repeats", "3", "--max-level-seconds", "5"),
        *("--out", str(tmp_path / "out"), "--json"),
        timeout=300,
    )
    assert done.returncode in (0, 2), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    result = load_result(tmp_path / "out" / "result.json")
    named = result.conditions.workload
    assert named is not None and named.kind == "dataset" and named.name == "dataset:sg.jsonl"


def test_capacity_asks_how_many_chat_users_hold_the_slo(url, tmp_path):
    """A probe at C users is C conversations of the workload's turns; the answer's perf point
    names the workload."""
    out = tmp_path / "m.json"
    done = rigbook(
        *("capacity", url, "--slo", "per_user_tok_s>=100", "--profile", "quick"),
        # Replies of 32 tokens: a reply shorter than a client stall gives the client-bound check
        # an unbounded share (scheduler._rate_moved), which the result cannot hash.
        *("--model", "synthetic", "--max-tokens", "32", "--warmup", "0", "--max-concurrency", "2"),
        *("--reruns", "0", "--rounds", "1", "--min-requests", "2", "--workload", "multi-turn"),
        *("--out", str(out), "--json"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = load_capacity(out)
    named = result.bench.conditions.workload
    assert named is not None and named.kind == "multi-turn"
    for cell in result.bench.cells:
        assert len(cell.requests) == cell.concurrency * 4  # every user's four turns
        assert [t.turn for t in cell.turns] == [1, 2, 3, 4]
    assert result.perf_points
    assert {p.conditions.workload for p in result.perf_points} == {"multi-turn"}
