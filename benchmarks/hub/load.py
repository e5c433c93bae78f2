"""Open-loop load on a real `rigbook hub serve`: seed a large hub, then fire requests at fixed rates.

    PYTHONPATH=. python benchmarks/hub/load.py [--db sqlite|postgresql] [--recipes 10000] [--results 50000]
        [--workers 2] [--rate 200] [--seconds 20] [--fuzz N]

Seeding: ``--recipes`` recipes over 500 models and 4 hardware setups, each with
claimed points and ``--results / --recipes`` published results' measured
points (two per result); they are stored through the hub's own import path
(500 to a transaction), so the leaderboard table is written the way a write
writes it. The results'
bodies are not stored (the pages and the board never read them).

Load: open loop. Request i is due at start + i/rate whatever happened to the
ones before, and its latency counts from when it was due, so a slow server
cannot hide its queue (no coordinated omission). Targets: the recipe JSON
and the recipe page of a random recipe, and a leaderboard page with random
filters. Prints one markdown row per (target, rate) with the machine's load
average, the hub's CPU time per answered request (its cost whatever else the
machine runs) and the client's own CPU share (it runs on the same machine).

``--fuzz N`` runs the schemathesis test with N examples per operation after
the load (``RIGBOOK_FUZZ_EXAMPLES``), the large run the test suite keeps small.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from rigbook.hub.app import create_app
from rigbook.hub.repository import import_records
from tests.conftest import free_port

MODELS, SETUPS = (
    500,
    (("H200", 1), ("H200", 8), ("RTX PRO 6000 Blackwell", 2), ("RTX PRO 6000 Blackwell", 4)),
)
LEVELS = (1, 4, 8, 16)
BATCH = 500


def record(i: int, results: int) -> dict:
    """Recipe ``i``: claimed points at every level, and ``results`` results' measured points (two each)."""
    card, count = SETUPS[i % len(SETUPS)]
    model = f"model-{i % MODELS}"
    rng = random.Random(i)
    claimed = [
        {
            "concurrency": c,
            "decode_tok_s": round(rng.uniform(20, 200) * c**0.7, 2),
            "claimed_by": "author",
            "context_len": 512,
        }
        for c in LEVELS
    ]
    measured = [
        {
            "concurrency": c,
            "decode_tok_s": round(rng.uniform(20, 200) * c**0.7, 2),
            "claimed_by": "measured",
            "evidence": "consistent-with-journal" if r % 2 else "measured-unverified",
            "published_by": f"user-{r}",
            "conditions": {
                "gpu_count": count,
                "card": f"NVIDIA {card}",
                "engine": "vllm",
                "quant": "fp8",
            },
        }
        for r in range(results)
        for c in LEVELS[:2]
    ]
    return {
        "slug": f"load-{i:05d}",
        "title": f"{model} on {count}x {card}, variant {i}",
        "config": {"launch": ["vllm", "serve", model]},
        "models": [{"slug": model, "name": model.upper(), "quant": "fp8"}],
        "hardware": [
            {
                "slug": card.lower().replace(" ", "-"),
                "vendor": "NVIDIA",
                "card": card,
                "device_count": count,
            }
        ],
        "engine_source": {"type": "pip", "base_engine": "vllm"},
        "tags": ["load"],
        "perf_points": claimed + measured,
    }


def seed(db: str, recipes: int, results: int) -> float:
    """Store the recipes; returns the seconds it took."""
    app = create_app(db)
    start = time.monotonic()
    per = [results // recipes + (1 if i < results % recipes else 0) for i in range(recipes)]
    for first in range(0, recipes, BATCH):
        batch = range(first, min(first + BATCH, recipes))
        import_records(app.state.sessions, [record(i, per[i]) for i in batch])
        print(
            f"  seeded {batch[-1] + 1} recipes ({time.monotonic() - start:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    app.state.engine.dispose()
    return time.monotonic() - start


def start_postgres(root: Path) -> tuple[str, callable]:
    """A PostgreSQL in ``root`` (as the tests start theirs); its URL and how to stop it."""
    from tests.hub.conftest import _pg_account, _pg_bin

    account = _pg_account()
    if account:
        os.chown(root, *account)
    as_user = {"user": account[0], "group": account[1]} if account else {}
    data, port = root / "data", free_port()
    subprocess.run(
        [
            _pg_bin("initdb"),
            "-D",
            str(data),
            "-U",
            "rigbook",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        cwd=root,
        **as_user,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200"
    subprocess.run(
        [_pg_bin("pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w", "start"],
        check=True,
        capture_output=True,
        cwd=root,
        **as_user,
    )

    def stop() -> None:
        subprocess.run(
            [_pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
            capture_output=True,
            cwd=root,
            **as_user,
        )

    return f"postgresql+psycopg://rigbook@127.0.0.1:{port}/postgres", stop


class Target:
    """One kind of request: a name and a function giving the next path."""

    def __init__(self, name: str, paths):
        self.name, self.paths = name, paths


def targets(recipes: int) -> list[Target]:
    rng = random.Random(7)

    def slug() -> str:
        return f"load-{rng.randrange(recipes):05d}"

    def board() -> str:
        model = f"model-{rng.randrange(MODELS)}"
        return rng.choice(
            [
                "/api/v1/leaderboard.json",
                f"/api/v1/leaderboard.json?model={model}",
                f"/api/v1/leaderboard.json?offset={rng.randrange(0, 5000)}&limit=50",
                f"/api/v1/leaderboard.json?model={model}&evidence=measured",
            ]
        )

    return [
        Target("recipe JSON", lambda: f"/api/v1/recipes/{slug()}.json"),
        Target("recipe page", lambda: f"/r/{slug()}"),
        Target("leaderboard JSON", board),
    ]


# Below uvicorn's keep-alive timeout (5 s): a connection idle longer may have been closed by the
# server, and a request sent on it ends in IncompleteReadError, counted as the hub's error.
IDLE_S = 2.0


async def fetch(host: str, port: int, pool: list, path: str) -> int:
    """One GET over a kept-alive connection from ``pool`` (a new one when none is free, or when the
    free one has idled past IDLE_S); the status."""
    reader = writer = None
    while pool:
        reader, writer, used = pool.pop()
        if time.monotonic() - used < IDLE_S and not reader.at_eof():
            break
        writer.close()
        reader = writer = None
    if reader is None or writer is None:
        reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    await reader.readexactly(length)
    pool.append((reader, writer, time.monotonic()))
    return status


async def open_loop(url: str, target: Target, rate: float, seconds: float) -> dict:
    """Requests due at a fixed rate; latency from when each was due."""
    host, port = url.removeprefix("http://").split(":")
    pool: list = []
    latencies, errors = [], 0
    start = time.perf_counter() + 0.2
    total = int(rate * seconds)

    async def one(due: float) -> None:
        nonlocal errors
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        try:
            status = await asyncio.wait_for(fetch(host, int(port), pool, target.paths()), 30)
            if status != 200:
                errors += 1
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
            errors += 1
        latencies.append(time.perf_counter() - due)

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(one(start + i / rate) for i in range(total)))
    wall = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for _reader, writer, _used in pool:
        writer.close()
    latencies.sort()

    def pct(q: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {
        "target": target.name,
        "rate": rate,
        "sent": total,
        "errors": errors,
        "achieved_rps": total / wall,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": 1000 * latencies[-1],
        "client_cpu": (cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime) / wall,
        "load": os.getloadavg()[0],
    }


def drain(url: str, limit_s: float = 120) -> None:
    """Wait until the hub answers a cheap request within 0.2 s: the last row's queue is gone, so one
    row's backlog does not count against the next."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        start = time.monotonic()
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url + "/static/hub.css", timeout=limit_s)
        if time.monotonic() - start < 0.2:
            return
        time.sleep(1)


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) of the hub's process tree so far: what its answers cost,
    whatever else the machine runs."""
    parent = psutil.Process(pid)
    total = 0.0
    for proc in [parent, *parent.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def serve(db: str, workers: int) -> tuple[str, subprocess.Popen]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rigbook",
            "hub",
            "serve",
            "--db",
            db,
            "--port",
            str(port),
            "--workers",
            str(workers),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/api/v1/recipes?limit=1", timeout=2).raise_for_status()
            return url, proc
        except httpx.HTTPError:
            time.sleep(0.5)
    raise RuntimeError("the hub did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    ap.add_argument("--recipes", type=int, default=10_000)
    ap.add_argument("--results", type=int, default=50_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--rate", type=float, action="append", help="requests/s (repeatable; default 200 and 500)"
    )
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument(
        "--fuzz", type=int, default=0, help="schemathesis examples per operation after the load"
    )
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rigbook-hub-load-"))
    stop_pg = None
    try:
        if args.db == "sqlite":
            db = f"sqlite:///{root / 'hub.sqlite3'}"
        else:
            db, stop_pg = start_postgres(root)
        print(
            f"seeding {args.recipes} recipes, {args.results} results on {args.db} ...",
            file=sys.stderr,
        )
        took = seed(db, args.recipes, args.results)
        print(f"seeded in {took:.0f} s; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
        url, proc = serve(db, args.workers)
        try:
            print(
                f"\n{args.db}, {args.workers} workers, {args.recipes} recipes, {args.results} results, "
                f"{args.seconds:g} s per row\n"
            )
            print(
                "| target | rate/s | sent | errors | achieved/s | p50 ms | p99 ms | max ms "
                "| server CPU ms/req | client CPU | load |"
            )
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for target in targets(args.recipes):
                for rate in args.rate or [200.0, 500.0]:
                    drain(url)
                    before = server_cpu(proc.pid)
                    r = asyncio.run(open_loop(url, target, rate, args.seconds))
                    per = 1000 * (server_cpu(proc.pid) - before) / max(1, r["sent"] - r["errors"])
                    print(
                        f"| {r['target']} | {r['rate']:g} | {r['sent']} | {r['errors']} "
                        f"| {r['achieved_rps']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} "
                        f"| {r['max_ms']:.0f} | {per:.2f} | {r['client_cpu']:.0%} | {r['load']:.2f} |",
                        flush=True,
                    )
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        if args.fuzz:
            subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "tests/hub/test_fuzz.py"],
                check=False,
                env=os.environ | {"RIGBOOK_FUZZ_EXAMPLES": str(args.fuzz)},
            )
    finally:
        if stop_pg:
            stop_pg()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
