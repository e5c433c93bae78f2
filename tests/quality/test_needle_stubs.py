"""needle against stub servers whose answers are known: an honest reader passes; servers that
echo, list every code, swap codes between vaults or copy the first or last code fail; a server
that cuts the prompt gives E_PROMPT_TRUNCATED, never a retrieval failure."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rigbook.quality import result as quality_result
from rigbook.quality.needle import NeedleSpec, run_needle
from rigbook.quality.result import run_info
from tests.quality import stubs


def _needle(url: str, tmp_path, facts: int, depths=(0.0, 0.5, 1.0), context: int = 3072):
    spec = NeedleSpec(
        url=url,
        model=None,
        contexts=[context],
        depths=list(depths),
        facts=facts,
        seed=7,
        warm=False,
        out=tmp_path / "needle.json",
    )
    return asyncio.run(run_needle(spec, run_info(), lambda p: None))


@pytest.mark.parametrize("tokenizer", [True, False])
def test_an_honest_reader_passes_with_decoys_around(tmp_path, tokenizer):
    with stubs.serve(stubs.Stub(stubs.honest, tokenizer=tokenizer)) as url:
        res = _needle(url, tmp_path, facts=3)
    assert [p.depth for p in res.probes] == [0.0, 0.5, 1.0]
    # Room for a `VAULT: CODE` line per fact.
    assert res.conditions.sampling.max_tokens == 16 * 3 + 16
    for p in res.probes:
        assert p.passed and p.faults == [] and p.truncated is False, p
        assert all(f.found and f.in_reply for f in p.facts)
        assert len(p.decoys) == 3 + 4
        assert p.prompt_tokens >= p.expected_prompt_tokens
    (point,) = res.quality_points
    assert point.quality.passed == point.quality.n == 3
    assert quality_result.load(tmp_path / "needle.json").probes[0].decoys == res.probes[0].decoys


@pytest.mark.parametrize(
    ("cheat", "facts", "faults"),
    [
        (stubs.echo, 2, {"echo", "decoy", "many_codes"}),
        (stubs.list_codes, 2, {"unbound", "decoy", "many_codes"}),
        (stubs.swap, 2, {"unbound"}),
        (stubs.copy_first, 1, {"decoy", "missed"}),
        (stubs.copy_last, 1, {"decoy", "missed"}),
    ],
)
def test_a_server_that_does_not_retrieve_fails(tmp_path, cheat, facts, faults):
    with stubs.serve(stubs.Stub(cheat)) as url:
        res = _needle(url, tmp_path, facts=facts)
    assert len(res.probes) == 3
    for p in res.probes:
        assert not p.passed and set(p.faults) == faults, (p.depth, p.faults, p.reply[:200])
        assert p.truncated is False and p.error is None
    (point,) = res.quality_points
    assert point.quality.passed == 0


def _cli_needle(url: str, out, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "rigbook", "needle", url, "--seed", "3", "--out", str(out)]
    return subprocess.run(
        [*command, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("tokenizer", [True, False])
def test_a_cut_prompt_is_its_own_code(tmp_path, tokenizer):
    """8,192 tokens asked of a server that keeps 6,000 (as Ollama keeps its num_ctx)."""
    out = tmp_path / "needle.json"
    stub = stubs.Stub(stubs.knows_nothing, tokenizer=tokenizer, context=6000)
    with stubs.serve(stub) as url:
        p = _cli_needle(url, out, "--context", "8192,3072", "--depths", "0,1")
    assert p.returncode == 2, p.stdout + p.stderr
    error = json.loads(p.stdout)["error"]
    assert error["code"] == "E_PROMPT_TRUNCATED" and "8192" in error["message"]
    assert "6000" in error["message"] and str(out) in error["message"]
    res = quality_result.load(out)
    assert res.complete
    cut = [p for p in res.probes if p.context == 8192]
    # One probe tells: the deeper ones would be cut the same way.
    assert len(cut) == 1 and cut[0].truncated and cut[0].prompt_tokens == 6000
    assert cut[0].expected_prompt_tokens > 6000 and not cut[0].passed
    kept = [p for p in res.probes if p.context == 3072]
    assert len(kept) == 2 and not any(p.truncated for p in kept)
    # Only the context served whole gives a quality point.
    assert [pt.context_len for pt in res.quality_points] == [3072]
    report = subprocess.run(
        [sys.executable, "-m", "rigbook", "report", str(out), "--format", "md", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    page = Path(json.loads(report.stdout)["report"]).read_text(encoding="utf-8")
    assert "| 8192 | 0 | cold | 0/2 | prompt cut | 6000 |" in page


def test_a_cut_calibration_is_its_own_code(tmp_path):
    """Without a tokenizer, a server that keeps 2,048 tokens cuts the calibration messages."""
    stub = stubs.Stub(stubs.knows_nothing, tokenizer=False, context=2048)
    with stubs.serve(stub) as url:
        p = _cli_needle(url, tmp_path / "n.json", "--context", "8192", "--depths", "0")
    assert p.returncode == 2, p.stdout + p.stderr
    error = json.loads(p.stdout)["error"]
    assert error["code"] == "E_PROMPT_TRUNCATED" and "2048" in error["message"]
