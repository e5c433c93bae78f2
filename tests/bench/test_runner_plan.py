"""One bench resolves one frozen RunPlan, once; the runner executes it and derives none of it
again (issue 34 item 1)."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

import rigbook.bench.clients
import rigbook.bench.plan
import rigbook.bench.request
import rigbook.bench.workers
from rigbook.bench.plan import CellSpec, resolve_plan
from rigbook.bench.profiles import Profile
from rigbook.bench.request import MeasureRequest
from rigbook.bench.workloads.model import Workload
from rigbook.errors import InputError
from tests.bench.helpers import measure_bench, synthetic_server


def _counted(monkeypatch) -> Counter:
    """Count the calls of each resolution, wherever a module holds it."""
    calls: Counter = Counter()

    def wrap(name: str, real):
        def counted(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return counted

    monkeypatch.setattr(
        rigbook.bench.plan, "resolve_plan", wrap("resolve_plan", rigbook.bench.plan.resolve_plan)
    )
    for module in (rigbook.bench.plan, rigbook.bench.clients):
        monkeypatch.setattr(module, "resolve", wrap("resolve", rigbook.bench.clients.resolve))
    for module in (rigbook.bench.plan, rigbook.bench.workers):
        monkeypatch.setattr(
            module, "cell_workers", wrap("cell_workers", rigbook.bench.workers.cell_workers)
        )
    monkeypatch.setattr(Profile, "content_hash", wrap("profile_hash", Profile.content_hash))
    monkeypatch.setattr(Workload, "content_hash", wrap("workload_hash", Workload.content_hash))
    return calls


def test_one_bench_resolves_its_plan_once(tmp_path, monkeypatch):
    with synthetic_server("--rate 2000") as url:
        calls = _counted(monkeypatch)
        done = measure_bench(url, tmp_path / "r.json", concurrency=[1, 2], requests=2, max_tokens=8)
    assert [c.concurrency for c in done.result.cells] == [1, 2]
    # cell_workers once per level; the client, the profile's and the workload's hash once a run.
    assert calls == {
        "resolve_plan": 1,
        "resolve": 1,
        "cell_workers": 2,
        "profile_hash": 1,
        "workload_hash": 1,
    }


def test_the_plan_holds_every_default_resolved(tmp_path):
    plan = resolve_plan(
        MeasureRequest(url="http://127.0.0.1:9/v1", profile="seed", out=tmp_path / "r.json")
    )
    assert plan.url == "http://127.0.0.1:9" and plan.mode == "burst"
    assert plan.cells == (
        CellSpec(concurrency=1, requests=8, duration_s=None, workers=1),
        CellSpec(concurrency=4, requests=8, duration_s=None, workers=1),
    )
    assert (plan.max_tokens, plan.warmup, plan.stall_s, plan.pool_workers) == (400, 1, 60.0, 1)
    assert plan.profile_ref.overrides == {} and plan.workload_ref.name == "prose"
    with pytest.raises(ValidationError):
        plan.mode = "sustained"  # type: ignore[misc]


def test_sustained_cells_carry_their_seconds_and_workers(tmp_path):
    plan = resolve_plan(
        MeasureRequest(
            url="http://127.0.0.1:9",
            concurrency=[2, 600],
            duration_s=3.0,
            workers=4,
            out=tmp_path / "r.json",
        )
    )
    assert plan.mode == "sustained" and plan.pool_workers == 4
    assert [(c.requests, c.duration_s, c.workers) for c in plan.cells] == [
        (None, 3.0, 2),
        (None, 3.0, 4),
    ]
    assert plan.profile_ref.overrides["mode"] == "sustained"


@pytest.mark.parametrize("text", ["1,x", "0,4", ""])
def test_bad_levels_are_one_input_error(text):
    with pytest.raises(InputError) as e:
        rigbook.bench.request.parse_levels(text)
    assert e.value.code == "E_INPUT" and "is not a list of positive integers" in e.value.message
