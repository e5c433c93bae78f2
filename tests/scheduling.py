"""How `make test` spreads the suite over pytest-xdist's workers: units, with two kinds of test
that must not overlap, and real engines kept apart where the rest allows.

A *unit* is what one worker runs from start to end: the tests of one module, in file order (so a
module-scoped fixture starts once), except two groups cut out of their modules:

- ``docker``: every test that needs the docker daemon, as one unit. The daemon is one per host,
  started by the worker's session fixture and stopped at its end, so one worker must hold them all.
- ``vllm``: tests that start vLLM (mark ``alone``), one unit per module. vLLM's engine wants every
  core and its start is most of such a test's time; two at once would each take twice as long. At
  most one such unit runs at a time; the worker holding one may queue the next, the others pass
  them by.

vLLM's units go first: run one after another they are the longest chain of the run, and started
last they would be its tail. While one runs, the other workers take units without an end-to-end
test where any are left, so that no llama-server or PostgreSQL competes with it for the cores.
The rest go out in file order.

Each worker collects the same tests, cuts them into the same units and writes them to the run's
plan folder; the controller's scheduler reads them there (it sees only node ids, not marks).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest
from xdist.scheduler.loadscope import LoadScopeScheduling
from xdist.workermanage import WorkerController

PLAN_DIR_ENV = "RIGBOOK_TEST_PLAN_DIR"
PLAN_FILE = "units.json"


@dataclass
class Unit:
    """Tests one worker runs in a row; ``exclusive`` names the group none of which may overlap;
    ``e2e`` says whether any of them starts a real engine or service."""

    key: str
    exclusive: str | None
    e2e: bool = False
    nodeids: list[str] = field(default_factory=list)


def unit_key(item: pytest.Item) -> tuple[str, str | None]:
    """The unit a test belongs to, and its exclusive group."""
    module = item.nodeid.split("::", 1)[0]
    if item.get_closest_marker("docker"):
        return "docker", "docker"
    if item.get_closest_marker("alone"):
        return f"{module} [vllm]", "vllm"
    return module, None


def plan_units(items: list[pytest.Item]) -> list[Unit]:
    """Cut the collection into units: vLLM's first, then the others in file order."""
    units: dict[str, Unit] = {}
    for item in items:
        key, exclusive = unit_key(item)
        unit = units.setdefault(key, Unit(key, exclusive))
        unit.e2e = unit.e2e or bool(item.get_closest_marker("e2e"))
        unit.nodeids.append(item.nodeid)
    return sorted(units.values(), key=lambda unit: unit.exclusive != "vllm")


def order_for_workers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: put the items in unit order and write the units for the controller."""
    folder = os.environ.get(PLAN_DIR_ENV)
    if not folder or not hasattr(config, "workerinput"):
        return
    units = plan_units(items)
    by_id = {item.nodeid: item for item in items}
    items[:] = [by_id[nodeid] for unit in units for nodeid in unit.nodeids]
    # Every worker writes the same bytes; a rename keeps a reader from seeing half of them.
    fd, tmp = tempfile.mkstemp(dir=folder)
    with os.fdopen(fd, "w") as out:
        json.dump([asdict(unit) for unit in units], out)
    os.replace(tmp, Path(folder) / PLAN_FILE)


class UnitScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling over our units: exclusive groups one at a time, no engine
    beside vLLM where other work is left, and a next unit only once a worker is down to the test
    it holds."""

    def __init__(self, config: pytest.Config, log=None) -> None:
        super().__init__(config, log)
        self.plan_dir = Path(os.environ[PLAN_DIR_ENV])
        self.scope_of: dict[str, str] = {}
        self.exclusive_of: dict[str, str | None] = {}
        self.e2e: set[str] = set()

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
            if unit.e2e:
                self.e2e.add(unit.key)
            self.workqueue[unit.key] = dict.fromkeys(unit.nodeids, False)
            self.scope_of.update(dict.fromkeys(unit.nodeids, unit.key))
        self._reschedule_all()

    def _reschedule_all(self) -> None:
        # One unit to each worker in turn: the first units go to different workers, not all to the
        # first one (which, holding one test, would take the next as well).
        while any([self._assign_next(node) for node in self.nodes]):
            pass

    def _running_groups(self, node: WorkerController) -> set[str]:
        """Exclusive groups with an unfinished unit on this worker."""
        return {
            group
            for key, unit in self.assigned_work[node].items()
            if (group := self.exclusive_of.get(key)) and not all(unit.values())
        }

    def _busy_groups(self, besides: WorkerController) -> set[str]:
        """Exclusive groups with an unfinished unit on another worker."""
        return set().union(*(self._running_groups(n) for n in self.nodes if n is not besides))

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
        free = [k for k in self.workqueue if self.exclusive_of[k] not in busy]
        if "vllm" in busy | self._running_groups(node):
            # vLLM's next unit, else light work: an engine waits until vLLM is done (stable sort:
            # file order within each kind).
            free.sort(key=lambda k: (self.exclusive_of[k] != "vllm", k in self.e2e))
        key = free[0] if free else None
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
