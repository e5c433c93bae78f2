"""What one wake of an idle process costs: the price of the bench client's stall ticker.

rigbook's :class:`~rigbook.bench.scheduler.ClientMonitor` wakes the event loop every quarter of
the stall limit (3.1 ms for 40 tok/s streams) while streams are open, so that a stall past the
limit is always seen. Each wake of an otherwise idle process costs CPU time of its own; divided
by the tokens a second that the streams bring, it is the ticker's share of a token's cost. This
prints the CPU per wake of a timer on uvloop, on asyncio's own loop, of a thread's sleep, and of
the monitor itself (one stream open, no reads).

    python benchmarks/scripts/client/tick_cost.py --period-ms 3.125 --wakes 1000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable

import uvloop

from rigbook.bench.client import ReadWatch
from rigbook.bench.scheduler import ClientMonitor


async def _timer_chain(wakes: int, period: float) -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    left = [wakes]

    def tick() -> None:
        left[0] -= 1
        if left[0]:
            loop.call_at(loop.time() + period, tick)
        else:
            done.set_result(None)

    loop.call_at(loop.time() + period, tick)
    await done


async def _monitor(wakes: int, period: float) -> None:
    reads = ReadWatch()
    reads.opened()
    # the gap between a stream's reads that gives this period: period = 0.25 x 0.5 x gap
    reads.gap_s = 8 * period
    monitor = ClientMonitor(reads)
    monitor.start()
    await asyncio.sleep(wakes * period)
    await monitor.stop()


def _thread_sleep(wakes: int, period: float) -> None:
    for _ in range(wakes):
        time.sleep(period)


def _cost(run: Callable[[], object], wakes: int) -> float:
    cpu = time.process_time()
    run()
    return 1e6 * (time.process_time() - cpu) / wakes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--period-ms", type=float, default=3.125, help="time between two wakes")
    ap.add_argument("--wakes", type=int, default=1000, help="wakes per measurement")
    args = ap.parse_args(argv)
    n, period = args.wakes, args.period_ms / 1000.0
    print("load average {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg()))
    ways: dict[str, Callable[[], object]] = {
        "uvloop timer": lambda: uvloop.run(_timer_chain(n, period)),
        "asyncio timer": lambda: asyncio.run(_timer_chain(n, period)),
        "thread sleep": lambda: _thread_sleep(n, period),
        "ClientMonitor": lambda: uvloop.run(_monitor(n, period)),
    }
    for name, run in ways.items():
        print(f"{name:14s} {_cost(run, n):6.1f} µs of CPU per wake", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
