"""The streams of a cell spread over worker processes (`rigbook bench --workers N`).

One process streams at most about 10⁶ ÷ (its CPU µs per token) tokens a second, whatever the
server could give. Past that the client is the limit, so a cell's streams can run in N processes:
a pool started once per run, each process with its own uvloop loop,
:class:`~rigbook.bench.client.ReadWatch` and :class:`~rigbook.bench.scheduler.ClientMonitor`.
Each worker is a fresh interpreter (``python -c``, as multiprocessing's "spawn" does, never a fork:
the parent has threads, the journal writer and the telemetry sampler, which a fork would copy
mid-state), talking to the parent over a socket pair with multiprocessing's ``Connection``. Unlike
multiprocessing's spawn it does not re-run the caller's main script, so a script that calls
:func:`rigbook.bench.measure.measure` needs no ``if __name__ == "__main__"`` guard.

- burst: the concurrency is split as evenly as possible (lane ``j`` of the cell belongs to worker
  ``j mod N``) and request ``i`` goes to the worker of lane ``i mod C``, so every index is sent
  exactly once;
- sustained: the concurrency is split the same way and every worker closes its streams at the
  window end the parent chose; the parent numbers the requests in the order they were sent.

A worker says when a request starts, sends each finished one back as it ends (its arrays as bytes,
not a message per token), and its :class:`~rigbook.bench.result.ClientLoad` at the end. The parent
builds every record with the same code as a one-process run, so timestamps must be on one clock:
``time.perf_counter()`` is ``CLOCK_MONOTONIC`` on Linux, one clock for the machine, and each
worker proves it (:func:`~rigbook.bench.worker_protocol.check_clock`) or refuses to start. A
worker that dies fails the requests it had in flight with a reason; the others finish the cell,
and the next cell gets a fresh one. The child's side is :mod:`rigbook.bench.worker`, the messages
:mod:`rigbook.bench.worker_protocol`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Literal

from pydantic import BaseModel, Field

from rigbook.bench.backend import RequestBodies
from rigbook.bench.result import Cell, ClientLoad, Distribution, RequestRecord, WorkerLoad
from rigbook.bench.worker_protocol import (
    BurstOrder,
    CellDone,
    Crashed,
    Finished,
    Quit,
    Ready,
    Started,
    StopCell,
    SustainedOrder,
    ToParent,
    WorkerSetup,
)
from rigbook.errors import InternalError
from rigbook.openai.stream import RawRequest

# One worker per this many streams of a cell: at the per-stream rates servers give under load, this
# many stay well inside one process's ceiling and four times as many would pass it (docs/bench.md,
# "Past one core: worker processes"; the figures are in benchmarks/runs/*-cpu-client/notes.md).
STREAMS_PER_WORKER = 256
# How long stopped workers get to end their streams and report before they are killed.
STOP_GRACE_S = 2.0
# How long a fresh worker may take to import rigbook and say it is ready.
START_TIMEOUT_S = 60.0


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), not all the machine has."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cell_workers(concurrency: int, asked: int | None, cpus: int | None = None) -> int:
    """How many processes stream a cell of ``concurrency`` streams: the ``asked`` number (never
    more than there are streams), or by default one per :data:`STREAMS_PER_WORKER` streams, at
    most the usable CPUs. One means the streams run in this process, as without workers."""
    if asked is not None:
        return max(1, min(asked, concurrency))
    cap = cpus if cpus is not None else usable_cpus()
    return max(1, min(cap, math.ceil(concurrency / STREAMS_PER_WORKER)))


def split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` counts as even as possible, the larger first."""
    return [total // parts + (1 if k < total % parts else 0) for k in range(parts)]


@dataclass
class _Worker:
    """The parent's handle on one worker process."""

    slot: int
    process: subprocess.Popen
    conn: Connection
    pid: int = 0
    alive: bool = True


# on_done(index, raw, prompt_index): the parent's handling of one finished request.
WorkerDone = Callable[[int, RawRequest, int], None]


@dataclass
class WorkerCell:
    """What the workers of one cell reported, for the parent to judge."""

    loads: dict[int, ClientLoad] = field(default_factory=dict)
    streams: dict[int, int] = field(default_factory=dict)
    pids: dict[int, int] = field(default_factory=dict)
    # request index -> worker slot, to give each worker its tokens
    owner: dict[int, int] = field(default_factory=dict)
    # sustained: the number a request was reported under -> its rank in send order, the number
    # one process would have given it
    ranks: dict[int, int] = field(default_factory=dict)
    died: dict[int, str] = field(default_factory=dict)
    window: tuple[float, float] | None = None
    # this process's CPU time over the cell: receiving and recording, not streaming
    parent_cpu_s: float = 0.0


class _CellRun:
    """The parent's book of one cell in flight: who has which request, who has reported."""

    def __init__(self, mode: Literal["burst", "sustained"], on_done: WorkerDone, prompts: int):
        self.mode, self.on_done, self.prompts = mode, on_done, prompts
        self.in_flight: dict[int, set[int]] = {}
        # burst: the indices dealt to each worker and not yet back
        self.owed: dict[int, set[int]] = {}
        self.waiting: set[int] = set()
        self.all_reported = asyncio.Event()
        self.cell = WorkerCell()
        # sustained: (worker's number, slot, raw), ranked in send order at the end
        self.finished: list[tuple[int, int, RawRequest]] = []
        self.stopping = False

    def expect(self, slot: int, pid: int, streams: int, dealt: list[int]) -> None:
        self.in_flight[slot], self.owed[slot] = set(), set(dealt)
        self.waiting.add(slot)
        self.cell.streams[slot], self.cell.pids[slot] = streams, pid

    def message(self, slot: int, msg: ToParent) -> None:
        if isinstance(msg, Started):
            self.in_flight[slot].add(msg.index)
        elif isinstance(msg, Finished):
            self.in_flight[slot].discard(msg.index)
            self.owed[slot].discard(msg.index)
            self._done(msg.index, slot, msg.raw.unpack())
        elif isinstance(msg, CellDone):
            self.cell.loads[slot] = msg.load
            if not self.stopping:  # a worker that lost requests must not leave a whole-looking cell
                self._fail(
                    slot, self.in_flight[slot] | self.owed[slot], "ended its share without it"
                )
            self._reported(slot)
        elif isinstance(msg, Crashed):
            self.lost(slot, f"failed: {msg.reason.splitlines()[0]}")

    def lost(self, slot: int, why: str) -> None:
        """Worker ``slot`` ended without reporting: what it had in flight failed (unless the cell
        was being stopped, when in-flight requests are dropped as in a one-process cell)."""
        if slot not in self.waiting:
            return
        self.cell.died[slot] = why
        if not self.stopping:
            self._fail(slot, self.in_flight[slot], why)
        self._reported(slot)

    def _fail(self, slot: int, indices: set[int], why: str) -> None:
        now = time.perf_counter()
        for i in sorted(indices):
            raw = RawRequest(sent=now)
            raw.error, raw.done = f"client_worker: worker {slot}: {why}", now
            self._done(i, slot, raw)
        self.in_flight[slot].clear()
        self.owed[slot].clear()

    def _done(self, i: int, slot: int, raw: RawRequest) -> None:
        if self.mode == "sustained":
            self.finished.append((i, slot, raw))
        else:
            self.cell.owner[i] = slot
        self.on_done(i, raw, i % self.prompts)

    def _reported(self, slot: int) -> None:
        self.waiting.discard(slot)
        if not self.waiting:
            self.all_reported.set()

    def rank_sustained(self) -> None:
        """Rank sustained requests in the order they were sent, as one process numbers them."""
        self.finished.sort(key=lambda f: f[2].sent)
        for rank, (i, slot, _) in enumerate(self.finished):
            self.cell.owner[rank] = slot
            self.cell.ranks[i] = rank


class WorkerPool:
    """Worker processes for a run's cells: started once, given each cell's share, quit at the end."""

    def __init__(
        self,
        size: int,
        *,
        url: str,
        bodies: RequestBodies,
        stall_s: float,
        client: Literal["compiled", "python"] = "python",
    ) -> None:
        self.size, self.url, self.bodies, self.stall_s = size, url, bodies, stall_s
        self.client = client
        self._workers: list[_Worker] = []
        self._run: _CellRun | None = None
        self._ready: dict[int, asyncio.Future[Ready]] = {}

    async def start(self) -> None:
        """Spawn the workers and wait until each is up with the parent's clock."""
        self._workers = [self._spawn(k) for k in range(self.size)]
        await asyncio.gather(*(self._await_ready(w) for w in self._workers))

    def _spawn(self, slot: int) -> _Worker:
        ours, theirs = socket.socketpair()
        # Each worker tags unique prompts its own way, so no two requests of a run share a prompt.
        setup = WorkerSetup(
            worker=slot,
            url=self.url,
            bodies=self.bodies.for_worker(slot),
            stall_s=self.stall_s,
            clock=time.perf_counter(),
            client=self.client,
        )
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"from rigbook.bench.worker import worker_main; worker_main({theirs.fileno()})",
            ],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env=_child_env(),
        )
        theirs.close()  # the worker holds the only other end: it reads EOF when the worker dies
        parent = Connection(ours.detach())
        parent.send(setup)
        worker = _Worker(slot=slot, process=proc, conn=parent)
        self._ready[slot] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().add_reader(parent.fileno(), self._readable, worker, setup.clock)
        # The loop made it non-blocking; a message is read whole once its first bytes are in.
        os.set_blocking(parent.fileno(), True)
        return worker

    async def _await_ready(self, worker: _Worker) -> None:
        try:
            ready = await asyncio.wait_for(self._ready[worker.slot], START_TIMEOUT_S)
        except TimeoutError:
            raise InternalError(
                "E_INTERNAL", f"bench worker {worker.slot} did not start in {START_TIMEOUT_S:g} s"
            ) from None
        worker.pid = ready.pid

    def _readable(self, worker: _Worker, spawned: float) -> None:
        while worker.alive:
            try:
                if not worker.conn.poll():
                    return
                msg: ToParent = worker.conn.recv()
            except (EOFError, OSError):
                self._died(worker)
                return
            if isinstance(msg, Ready):
                self._on_ready(worker, msg, spawned)
            elif self._run is not None:
                self._run.message(worker.slot, msg)
            elif isinstance(msg, Crashed):
                self._fail_start(worker, msg.reason)

    def _on_ready(self, worker: _Worker, msg: Ready, spawned: float) -> None:
        now = time.perf_counter()
        future = self._ready[worker.slot]
        if future.done():
            return
        if spawned <= msg.clock <= now:
            future.set_result(msg)
        else:
            future.set_exception(
                InternalError(
                    "E_INTERNAL",
                    f"bench worker {worker.slot}'s clock read {msg.clock:.6f}, outside the "
                    f"parent's {spawned:.6f} to {now:.6f}: the processes do not share one clock",
                    "Run with --workers 1 on this platform.",
                )
            )

    def _fail_start(self, worker: _Worker, reason: str) -> None:
        future = self._ready.get(worker.slot)
        if future is not None and not future.done():
            future.set_exception(
                InternalError("E_INTERNAL", f"bench worker {worker.slot} failed: {reason}")
            )

    def _died(self, worker: _Worker) -> None:
        worker.alive = False
        asyncio.get_running_loop().remove_reader(worker.conn.fileno())
        try:
            code: int | None = worker.process.wait(1.0)
        except subprocess.TimeoutExpired:
            code = None
        how = (
            f"killed by {signal.Signals(-code).name}"
            if code is not None and code < 0
            else f"exited with status {code}"
        )
        why = f"pid {worker.process.pid} {how}"
        self._fail_start(worker, why)
        if self._run is not None:
            self._run.lost(worker.slot, why)

    async def _revive(self) -> None:
        """Replace the workers that died in an earlier cell."""
        fresh = []
        for k, w in enumerate(self._workers):
            if not w.alive:
                w.conn.close()
                self._workers[k] = self._spawn(w.slot)
                fresh.append(self._workers[k])
        await asyncio.gather(*(self._await_ready(w) for w in fresh))

    async def run_cell(
        self,
        *,
        mode: Literal["burst", "sustained"],
        workers: int,
        concurrency: int,
        requests: int | None,
        duration_s: float | None,
        stop: asyncio.Event,
        on_done: WorkerDone,
    ) -> WorkerCell:
        """Run one cell on the first ``workers`` workers; ``on_done(index, raw, prompt_index)``
        for every request as it ends (sustained: under the worker's own number, unique in the
        cell; the returned cell's ``ranks`` renumbers them in the order they were sent).
        Setting ``stop`` ends every worker's streams within about a second."""
        await self._revive()
        lanes = split(concurrency, workers)
        used = self._workers[:workers]
        # Burst: lane j is worker j mod N's and request i runs on lane i mod C.
        dealt: list[list[int]] = [[] for _ in used]
        for i in range(requests or 0):
            dealt[(i % concurrency) % workers].append(i)
        run = _CellRun(mode, on_done, len(self.bodies))
        for w, n, mine in zip(used, lanes, dealt, strict=True):
            run.expect(w.slot, w.pid, n, mine)
        self._run = run
        start, cpu = time.perf_counter(), time.process_time()
        try:
            if mode == "burst":
                for w, n, mine in zip(used, lanes, dealt, strict=True):
                    w.conn.send(BurstOrder(lanes=n, indices=mine))
            else:
                assert duration_s is not None
                end = start + duration_s
                for w, n in zip(used, lanes, strict=True):
                    w.conn.send(SustainedOrder(lanes=n, end=end, first=w.slot, step=workers))
            await self._until_reported(run, used, stop)
        finally:
            self._run = None
        run.cell.parent_cpu_s = time.process_time() - cpu
        if mode == "sustained":
            run.rank_sustained()
            run.cell.window = (start, min(start + (duration_s or 0.0), time.perf_counter()))
        return run.cell

    async def _until_reported(
        self, run: _CellRun, used: list[_Worker], stop: asyncio.Event
    ) -> None:
        stopper = asyncio.create_task(stop.wait())
        reported = asyncio.create_task(run.all_reported.wait())
        try:
            await asyncio.wait({stopper, reported}, return_when=asyncio.FIRST_COMPLETED)
            if reported.done():
                return
            run.stopping = True
            for w in used:
                if w.alive:
                    w.conn.send(StopCell())
            try:
                await asyncio.wait_for(asyncio.shield(reported), STOP_GRACE_S)
            except TimeoutError:
                for w in used:
                    if w.slot in run.waiting and w.alive:
                        w.process.kill()
                await reported
        finally:
            stopper.cancel()
            reported.cancel()

    def close(self) -> None:
        """Tell every worker to quit and wait a moment; kill those that do not."""
        loop = asyncio.get_running_loop()
        for w in self._workers:
            if w.alive:
                loop.remove_reader(w.conn.fileno())
                with contextlib.suppress(OSError):
                    w.conn.send(Quit())
        for w in self._workers:
            try:
                w.process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                w.process.kill()
                w.process.wait()
            w.conn.close()


def _child_env() -> dict[str, str]:
    """This environment, with the rigbook this process runs first on the path, so the worker
    imports the same code however the parent found it."""
    import rigbook

    root = os.path.dirname(os.path.dirname(os.path.abspath(rigbook.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def merge_loads(cell: WorkerCell, records: list[RequestRecord]) -> ClientLoad:
    """The workers' client loads as one, for :func:`~rigbook.bench.scheduler.judge_client`:
    CPU time summed (so µs per token stays the cost of a token in one process), the worst stall,
    lag and read gap the worst any worker had, ``cpu_fraction`` that of the busiest process (each
    process is on one core), the lag percentiles the highest any worker had. Each worker's own
    figures are kept under ``per_worker``."""
    tokens: dict[int, int] = {}
    requests: dict[int, int] = {}
    for r in records:
        slot = cell.owner.get(r.index)
        if slot is not None:
            requests[slot] = requests.get(slot, 0) + 1
            if r.ok or r.cut_at_window:
                tokens[slot] = tokens.get(slot, 0) + r.output_tokens
    per_worker = []
    for slot in sorted(cell.streams):
        load = cell.loads.get(slot)
        done = tokens.get(slot, 0)
        per_worker.append(
            WorkerLoad(
                worker=slot,
                pid=cell.pids.get(slot),
                streams=cell.streams[slot],
                requests=requests.get(slot, 0),
                tokens=done,
                cpu_s=load.cpu_s if load else None,
                cpu_fraction=load.cpu_fraction if load else None,
                cpu_us_per_token=load.cpu_s * 1e6 / done if load and done else None,
                stall_worst_bound_ms=load.stall_worst_bound_ms if load else None,
                died=cell.died.get(slot),
            )
        )
    loads = list(cell.loads.values())
    worst = max(loads, key=lambda x: x.stall_worst_bound_ms or 0.0, default=None)
    return ClientLoad(
        loop_lag_ms=_worst_distribution([x.loop_lag_ms for x in loads]),
        loop_lag_worst_ms=_max(x.loop_lag_worst_ms for x in loads),
        stall_worst_bound_ms=_max(x.stall_worst_bound_ms for x in loads),
        worst_stall_cpu_ms=worst.worst_stall_cpu_ms if worst else None,
        read_gap_worst_ms=_max(x.read_gap_worst_ms for x in loads),
        # Kernel stamps only when every worker had them: one that stamped at read is judged so.
        timestamps="kernel" if loads and all(x.timestamps == "kernel" for x in loads) else None,
        merged_read_worst_ms=_max(x.merged_read_worst_ms for x in loads),
        first_read_worst_ms=_max(x.first_read_worst_ms for x in loads),
        last_read_worst_ms=_max(x.last_read_worst_ms for x in loads),
        end_late_worst_ms=_max(x.end_late_worst_ms for x in loads),
        next_request_late_worst_ms=_max(x.next_request_late_worst_ms for x in loads),
        unstamped_reads=_sum_counts(x.unstamped_reads for x in loads),
        cpu_s=sum(x.cpu_s for x in loads),
        wall_s=max((x.wall_s for x in loads), default=0.0),
        cpu_fraction=max((x.cpu_fraction for x in loads), default=0.0),
        client_bound=False,
        workers=len(cell.streams),
        per_worker=per_worker,
        parent_cpu_s=cell.parent_cpu_s,
    )


def _max(values) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _sum_counts(values) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _worst_distribution(dists: list[Distribution]) -> Distribution:
    """Several processes' distributions as one: counts summed, the mean weighted, every other
    figure the highest (a bound, since the samples themselves stay in the workers)."""
    full = [d for d in dists if d.n]
    if not full:
        return Distribution()
    n = sum(d.n for d in full)
    return Distribution(
        n=n,
        mean=sum((d.mean or 0.0) * d.n for d in full) / n,
        min=min(d.min for d in full if d.min is not None),
        **{
            key: max(getattr(d, key) for d in full if getattr(d, key) is not None)
            for key in ("p10", "p50", "p90", "p99", "max")
        },
    )


class Ceiling(BaseModel):
    """The most the client could take in at the CPU cost per token it measured: one process
    spends at most 10⁶ µs a second, so it ingests at most 10⁶ ÷ (µs per token) tokens a second,
    and N processes N times that when N CPUs are free for them."""

    cell: int = Field(description="The cell whose cost per token it is: the cheapest.")
    concurrency: int
    cpu_us_per_token: float
    one_process_tok_s: float
    workers: int = Field(description="The most worker processes any cell of the run used.")
    workers_tok_s: float = Field(description="workers x one_process_tok_s.")


def ceiling(cells: list[Cell]) -> Ceiling | None:
    """The client's ceiling from the cheapest cell's CPU µs per token (None before any token)."""
    costed = [
        (c.client.cpu_us_per_token, c)
        for c in cells
        if c.client is not None and c.client.cpu_us_per_token
    ]
    if not costed:
        return None
    cost, best = min(costed, key=lambda pair: pair[0])
    one = 1e6 / cost
    n = max((c.client.workers or 1) if c.client is not None else 1 for c in cells)
    return Ceiling(
        cell=best.index,
        concurrency=best.concurrency,
        cpu_us_per_token=cost,
        one_process_tok_s=one,
        workers=n,
        workers_tok_s=n * one,
    )
