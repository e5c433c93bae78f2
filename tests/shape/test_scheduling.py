"""The xdist scheduler of `make test` (tests/scheduling.py), driven on a scripted clock: each test
runs once, vLLM's units first and never two at once, no engine beside vLLM while other work is
left, docker's tests on one worker, and no worker waits on a test it holds."""

from __future__ import annotations

import heapq
import itertools
import json
from dataclasses import asdict
from types import SimpleNamespace

import pytest

from tests.scheduling import PLAN_DIR_ENV, PLAN_FILE, Unit, UnitScheduling


class Worker:
    """What the scheduler sees of an xdist worker: tests sent to it, and a shutdown."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.queue: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        assert not self.shutting_down
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def can_run(self) -> bool:
        """pytest-xdist's worker runs a test once it holds the next one, or has been told to end."""
        return len(self.queue) >= 2 or (self.shutting_down and bool(self.queue))


def simulate(tmp_path, monkeypatch, units: list[Unit], seconds: dict[str, float], workers: int):
    """Run the units on ``workers`` simulated workers; each test takes its seconds. Returns each
    test's (worker, start, end) and the end of the run."""
    monkeypatch.setenv(PLAN_DIR_ENV, str(tmp_path))
    (tmp_path / PLAN_FILE).write_text(json.dumps([asdict(u) for u in units]))
    collection = sorted(seconds)  # the workers' collection, in file order
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=SimpleNamespace())
    sched = UnitScheduling(config)  # type: ignore[arg-type]
    nodes = [Worker(f"gw{k}") for k in range(workers)]
    for node in nodes:
        sched.add_node(node)  # type: ignore[arg-type]
        sched.add_node_collection(node, collection)  # type: ignore[arg-type]
    sched.schedule()
    now, running, ran = 0.0, [], {}
    busy: set[str] = set()

    def start_what_can_start() -> None:
        for node in nodes:
            if node.gateway.id not in busy and node.can_run():
                index = node.queue.pop(0)
                nodeid = collection[index]
                busy.add(node.gateway.id)
                ran[nodeid] = (node.gateway.id, now, now + seconds[nodeid])
                heapq.heappush(running, (now + seconds[nodeid], node.gateway.id, index))

    start_what_can_start()
    while running:
        now, name, index = heapq.heappop(running)
        busy.discard(name)
        node = next(n for n in nodes if n.gateway.id == name)
        sched.mark_test_complete(node, index)  # type: ignore[arg-type]
        start_what_can_start()
    assert all(not n.queue for n in nodes), "a worker was left holding tests"
    assert sched.tests_finished
    return ran, now


def unit(key: str, tests: int, each_s: float, exclusive: str | None = None, e2e: bool = False):
    nodeids = [f"{key}::t{k}" for k in range(tests)]
    return Unit(key, exclusive, e2e or exclusive is not None, nodeids), dict.fromkeys(
        nodeids, each_s
    )


def plan(*specs):
    """Units as the workers write them: vLLM's first, the rest in the order given."""
    units, seconds = [], {}
    for spec in specs:
        u, s = unit(*spec)
        units.append(u)
        seconds.update(s)
    return sorted(units, key=lambda u: u.exclusive != "vllm"), seconds


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_every_test_runs_once_and_vllm_units_never_overlap(tmp_path, monkeypatch, workers):
    units, seconds = plan(
        ("tests/a_vllm_e2e.py [vllm]", 3, 40.0, "vllm"),
        ("tests/b_vllm_e2e.py [vllm]", 1, 90.0, "vllm"),
        ("tests/c_vllm_e2e.py [vllm]", 2, 25.0, "vllm"),
        ("docker", 6, 8.0, "docker"),
        ("tests/big.py", 40, 2.0),
        ("tests/one_slow.py", 1, 70.0),
        *[(f"tests/small_{k}.py", 5, 0.5) for k in range(30)],
    )
    ran, _ = simulate(tmp_path, monkeypatch, units, seconds, workers)
    assert sorted(ran) == sorted(seconds)
    vllm = sorted((start, end) for n, (_, start, end) in ran.items() if "vllm" in n)
    assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(vllm))
    assert len({ran[n][0] for n in seconds if n.startswith("docker")}) == 1
    # A unit's tests stay on one worker, so a module's fixtures start once.
    for u in units:
        assert len({ran[n][0] for n in u.nodeids}) == 1, u.key


def test_vllm_goes_first_and_the_others_take_no_engine_beside_it_while_they_can(
    tmp_path, monkeypatch
):
    # Two vLLM units (100 s in all), two llama-server units and thirty light ones on two workers:
    # one worker runs vLLM from the start; the other runs the light units beside it, and the
    # engines only once vLLM is done or nothing light is left.
    units, seconds = plan(
        ("tests/e2e_a.py", 1, 30.0, None, True),
        *[(f"tests/light_{k:02}.py", 1, 4.0) for k in range(30)],
        ("tests/e2e_b.py", 1, 30.0, None, True),
        ("tests/a_vllm_e2e.py [vllm]", 1, 60.0, "vllm"),
        ("tests/b_vllm_e2e.py [vllm]", 1, 40.0, "vllm"),
    )
    ran, _ = simulate(tmp_path, monkeypatch, units, seconds, 2)
    assert ran["tests/a_vllm_e2e.py [vllm]::t0"][1] == 0.0
    vllm_end = ran["tests/b_vllm_e2e.py [vllm]::t0"][2]
    assert vllm_end == 100.0
    for engine in ("tests/e2e_a.py::t0", "tests/e2e_b.py::t0"):
        assert ran[engine][1] >= vllm_end, ran


def test_beside_vllm_an_engine_runs_once_nothing_else_is_left(tmp_path, monkeypatch):
    # The worker on vLLM holds a light unit for pytest; the other runs the two light ones left,
    # then the engine rather than wait.
    units, seconds = plan(
        ("tests/e2e_a.py", 1, 10.0, None, True),
        *[(f"tests/light_{k}.py", 1, 5.0) for k in range(3)],
        ("tests/a_vllm_e2e.py [vllm]", 1, 100.0, "vllm"),
    )
    ran, end = simulate(tmp_path, monkeypatch, units, seconds, 2)
    assert end == 105.0 and ran["tests/e2e_a.py::t0"][1:] == (10.0, 20.0)


def test_a_worker_with_only_the_held_groups_left_ends_instead_of_waiting(tmp_path, monkeypatch):
    # Three vLLM units and nothing else: one worker runs them in a row, and the other ends at once.
    units, seconds = plan(
        ("tests/a_vllm_e2e.py [vllm]", 1, 30.0, "vllm"),
        ("tests/b_vllm_e2e.py [vllm]", 1, 20.0, "vllm"),
        ("tests/c_vllm_e2e.py [vllm]", 1, 10.0, "vllm"),
    )
    ran, end = simulate(tmp_path, monkeypatch, units, seconds, 2)
    assert end == 60.0 and len({worker for worker, _, _ in ran.values()}) == 1


def test_a_plan_that_does_not_hold_the_collection_is_refused(tmp_path, monkeypatch):
    units, seconds = plan(("tests/a.py", 2, 1.0))
    seconds["tests/elsewhere.py::t0"] = 1.0  # collected, in no unit
    with pytest.raises(pytest.UsageError, match="unit plan"):
        simulate(tmp_path, monkeypatch, units, seconds, 2)
