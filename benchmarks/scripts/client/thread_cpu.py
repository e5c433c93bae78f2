"""Where `rigbook bench`'s CPU goes, thread by thread: user and kernel µs per streamed token.

One cell of ``--streams`` streams against the synthetic server (its own process, one token per
SSE event), read from ``/proc/PID/task/*/stat`` over a window in the middle of the cell, divided
by the tokens the server sent in that window. With the compiled client the threads are the event
loop's (``python``) and the reader's (``rigbook-reader``).

    python benchmarks/scripts/client/thread_cpu.py --streams 64 --rate 40 --tokens 1500 --window 20

Linux only. The machine's load average is printed before and after: the figures move with it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from compare_clients import REPO, _with_repo, generated

from rigbook_testkit.launch import start_synthetic

TICK = os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> dict[str, tuple[float, float]]:
    """User and kernel CPU seconds of each of a process's threads, summed by thread name."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[name][0] += int(fields[11]) / TICK
        out[name][1] += int(fields[12]) / TICK
    return {name: (user, kernel) for name, (user, kernel) in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--rate", type=float, default=40.0, help="tok/s per stream")
    ap.add_argument("--tokens", type=int, default=1500, help="tokens per reply")
    ap.add_argument("--window", type=float, default=20.0, help="seconds measured mid-cell")
    ap.add_argument("--client", default="auto", choices=["auto", "python", "compiled"])
    args = ap.parse_args()
    lead = (args.tokens / args.rate - args.window) / 2
    if lead < 1.0:
        ap.error("the replies must last the window and a second either side: more --tokens")
    print(f"load average before: {os.getloadavg()}", flush=True)
    server, url = start_synthetic(
        *f"--rate {args.rate} --falloff 0 --tokens-per-chunk 1 --ttft-s 0.03".split(),
        show_stderr=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        bench = subprocess.Popen(
            [
                *(sys.executable, "-m", "rigbook", "bench", url, "--model", "synthetic"),
                *("--concurrency", str(args.streams), "--requests", str(args.streams)),
                *("--max-tokens", str(args.tokens), "--warmup", "0", "--client", args.client),
                *("--out", str(Path(tmp) / "r.json"), "--json"),
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": _with_repo()},
        )
        try:
            time.sleep(lead)
            before, g0, t0 = threads(bench.pid), generated(url), time.monotonic()
            time.sleep(args.window)
            after, g1, t1 = threads(bench.pid), generated(url), time.monotonic()
            bench.wait(timeout=args.tokens / args.rate + 120)
        finally:
            bench.kill()
            server.terminate()
            server.wait(10)
    tokens = g1 - g0
    print(f"{tokens:.0f} tokens in {t1 - t0:.1f} s mid-cell; µs per token:")
    total = [0.0, 0.0]
    for name in sorted(after):
        user = after[name][0] - before.get(name, (0.0, 0.0))[0]
        kernel = after[name][1] - before.get(name, (0.0, 0.0))[1]
        total[0], total[1] = total[0] + user, total[1] + kernel
        print(f"{name:20s} user {1e6 * user / tokens:6.2f} kernel {1e6 * kernel / tokens:6.2f}")
    print(
        f"{'TOTAL':20s} user {1e6 * total[0] / tokens:6.2f} kernel {1e6 * total[1] / tokens:6.2f}"
        f" sum {1e6 * sum(total) / tokens:6.2f}"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
