"""Every test is in exactly one tier (unit, integration, e2e), so `make test-unit`,
`test-integration` and `test-e2e` together run the whole suite, each test once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import TIERS

ROOT = Path(__file__).resolve().parents[2]


def _marks(tmp_path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """Each collected test's tier marks and its docker and alone marks, as the conftest hook left
    them."""
    report = tmp_path / "tiers.tsv"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env={**os.environ, "RIGBOOK_TIER_REPORT": str(report)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = (line.split("\t") for line in report.read_text(encoding="utf-8").splitlines())
    return {nodeid: (marks.split(), others.split()) for nodeid, marks, others in rows}


def test_every_test_has_exactly_one_tier_and_docker_and_vllm_are_marked(tmp_path):
    found = _marks(tmp_path)
    tiers = {n: tier for n, (tier, _) in found.items()}
    assert len(tiers) > 1000
    assert [n for n, marks in tiers.items() if len(marks) != 1 or marks[0] not in TIERS] == []
    by_tier = {t: {n for n, marks in tiers.items() if marks == [t]} for t in TIERS}
    assert all(by_tier.values()), {t: len(v) for t, v in by_tier.items()}
    # What each tier is for: a real engine, a PostgreSQL or a docker daemon is e2e; the synthetic
    # server is integration; parsing an SLO is unit.
    assert all(tiers[n] == ["e2e"] for n in tiers if n.startswith("tests/bench/test_llama_e2e.py"))
    assert all(tiers[n] == ["e2e"] for n in tiers if n.startswith("tests/docker/"))
    hub = [n for n in tiers if n.startswith("tests/hub/test_api.py")]
    assert {tuple(tiers[n]) for n in hub if "postgresql" in n} == {("e2e",)}
    assert hub and not any(tiers[n] == ["e2e"] for n in hub if "sqlite" in n)
    for path, tier in [
        ("tests/bench/test_synthetic.py", "integration"),
        ("tests/capacity/test_slo.py", "unit"),
    ]:
        assert {tuple(tiers[n]) for n in tiers if n.startswith(path)} == {(tier,)}, path
    # The scheduler (tests/scheduling.py) keeps docker's tests on one worker (one daemon per host)
    # and runs vLLM's one module at a time (each engine wants every core); llama-server and
    # PostgreSQL are each worker's own.
    docker = {n for n, (_, more) in found.items() if "docker" in more}
    alone = {n for n, (_, more) in found.items() if "alone" in more}
    assert all(n in docker for n in tiers if n.startswith("tests/docker/"))
    assert any(n in docker for n in tiers if n.startswith("tests/launch/test_seed_docker.py"))
    for path in ("tests/launch/test_vllm_e2e.py", "tests/bench/test_vllm_e2e.py"):
        assert all(n in alone for n in tiers if n.startswith(path)), path
    assert not any(
        n in docker | alone for n in tiers if n.startswith("tests/bench/test_llama_e2e.py")
    )
    assert not any(n in docker | alone for n in hub if "postgresql" in n)
    assert all(tiers[n] == ["e2e"] for n in docker | alone)
