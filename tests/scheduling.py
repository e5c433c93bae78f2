"""How `make test` spreads the suite over pytest-xdist's workers: units, longest first, with two
kinds of test that must not overlap.

A *unit* is what one worker runs from start to end: the tests of one module, in file order (so a
module-scoped fixture starts once), except two groups cut out of their modules:

- ``docker``: every test that needs the docker daemon, as one unit. The daemon is one per host,
  started by the worker's session fixture and stopped at its end, so one worker must hold them all.
- ``vllm``: tests that start vLLM (mark ``alone``), one unit per module. vLLM's engine wants every
  core and its start is most of such a test's time; two at once would each take twice as long. At
  most one such unit runs at a time; the worker holding one may queue the next, the others pass
  them by and go on with the rest.

Each worker collects the same tests, cuts them into the same units and writes them to the run's
plan folder; the controller's scheduler reads them there (it sees only node ids, not marks). Units
go out longest first, by the seconds `tests/durations.json` expects of each, so the run ends on
short units instead of waiting on one long one. A stale or missing figure only balances the
workers less well; it never changes what runs.

`RIGBOOK_DURATIONS_OUT=FILE make test` writes each unit's measured seconds to FILE, the form
`tests/durations.json` keeps.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections import OrderedDict, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest
from xdist.scheduler.loadscope import LoadScopeScheduling
from xdist.workermanage import WorkerController

DURATIONS = Path(__file__).parent / "durations.json"
PLAN_DIR_ENV = "RIGBOOK_TEST_PLAN_DIR"
PLAN_FILE = "units.json"
DURATIONS_OUT_ENV = "RIGBOOK_DURATIONS_OUT"


@dataclass
class Unit:
    """Tests one worker runs in a row; ``exclusive`` names the group none of which may overlap."""

    key: str
    exclusive: str | None
    expected_s: float
    nodeids: list[str] = field(default_factory=list)


def unit_key(item: pytest.Item) -> tuple[str, str | None]:
    """The unit a test belongs to, and its exclusive group."""
    module = item.nodeid.split("::", 1)[0]
    if item.get_closest_marker("docker"):
        return "docker", "docker"
    if item.get_closest_marker("alone"):
        return f"{module} [vllm]", "vllm"
    return module, None


def plan_units(items: list[pytest.Item], expected: dict[str, float]) -> list[Unit]:
    """Cut the collection into units, longest expected first (ties keep file order)."""
    units: dict[str, Unit] = {}
    known = sorted(expected.values())
    default = statistics.median(known) if known else 1.0
    for item in items:
        key, exclusive = unit_key(item)
        if key not in units:
            units[key] = Unit(key, exclusive, expected.get(key, default))
        units[key].nodeids.append(item.nodeid)
    return sorted(units.values(), key=lambda unit: -unit.expected_s)


def order_for_workers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: put the items in unit order and write the units for the controller."""
    folder = os.environ.get(PLAN_DIR_ENV)
    if not folder or not hasattr(config, "workerinput"):
        return
    expected = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    units = plan_units(items, expected)
    by_id = {item.nodeid: item for item in items}
    items[:] = [by_id[nodeid] for unit in units for nodeid in unit.nodeids]
    # Every worker writes the same bytes; a rename keeps a reader from seeing half of them.
    fd, tmp = tempfile.mkstemp(dir=folder)
    with os.fdopen(fd, "w") as out:
        json.dump([asdict(unit) for unit in units], out)
    os.replace(tmp, Path(folder) / PLAN_FILE)


class UnitScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling over our units: longest first, exclusive groups one at a
    time, and a next unit only once a worker is down to the test it holds."""

    def __init__(self, config: pytest.Config, log=None) -> None:
        super().__init__(config, log)
        self.plan_dir = Path(os.environ[PLAN_DIR_ENV])
        self.scope_of: dict[str, str] = {}
        self.exclusive_of: dict[str, str | None] = {}

    def _split_scope(self, nodeid: str) -> str:
        return self.scope_of[nodeid]

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:  # a worker came up late
            self._reschedule_all()
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        units = [Unit(**raw) for raw in json.loads((self.plan_dir / PLAN_FILE).read_text())]
        planned = [nodeid for unit in units for nodeid in unit.nodeids]
        if sorted(planned) != sorted(self.collection):
            raise pytest.UsageError(
                "the workers' unit plan does not hold the collected tests (tests/scheduling.py)"
            )
        for unit in units:
            self.exclusive_of[unit.key] = unit.exclusive
            self.workqueue[unit.key] = dict.fromkeys(unit.nodeids, False)
            self.scope_of.update(dict.fromkeys(unit.nodeids, unit.key))
        self._reschedule_all()

    def _reschedule_all(self) -> None:
        # One unit to each worker in turn: the longest units go to different workers, not both to
        # the first one (which, holding one test, would take the next as well).
        while any([self._assign_next(node) for node in self.nodes]):
            pass

    def _busy_groups(self, besides: WorkerController) -> set[str]:
        """Exclusive groups with a unfinished unit on another worker."""
        return {
            group
            for node, workload in self.assigned_work.items()
            if node is not besides
            for key, unit in workload.items()
            if (group := self.exclusive_of.get(key)) and not all(unit.values())
        }

    def _reschedule(self, node: WorkerController) -> None:
        while self._assign_next(node):
            pass

    def _assign_next(self, node: WorkerController) -> bool:
        """Give a worker down to one test its next unit; whether it got one."""
        # pytest runs a test once it knows the next one (for its teardown), so a worker down to
        # one test needs another unit; committing no earlier keeps the last units free for
        # whichever worker ends first.
        if node.shutting_down or self._pending_of(self.assigned_work[node]) > 1:
            return False
        busy = self._busy_groups(besides=node)
        key = next((k for k in self.workqueue if self.exclusive_of[k] not in busy), None)
        if key is None:
            # Nothing left, or only units of groups another worker holds: that worker runs them
            # one after another, as they must, so this one has nothing to wait for.
            node.shutdown()
            return False
        work_unit = self.workqueue.pop(key)
        self.assigned_work[node][key] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some(
            [collection.index(nodeid) for nodeid, done in work_unit.items() if not done]
        )
        return True


class DurationRecorder:
    """On the controller, with RIGBOOK_DURATIONS_OUT set: each unit's seconds (setup, call and
    teardown of its tests), written at the end of the run."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self) -> None:
        folder = os.environ.get(PLAN_DIR_ENV)
        if not folder or not (Path(folder) / PLAN_FILE).is_file():
            return
        units = json.loads((Path(folder) / PLAN_FILE).read_text())
        per_unit = OrderedDict(
            (unit["key"], round(sum(self.seconds[n] for n in unit["nodeids"]), 1)) for unit in units
        )
        self.out.write_text(json.dumps(dict(sorted(per_unit.items())), indent=1) + "\n")
