"""`make bench-hub`: the hub beside a same-stack baseline serving the same bytes, on SQLite and PostgreSQL.

    PYTHONPATH=. python benchmarks/hub/bench_hub.py [--db sqlite --db postgresql] [--recipes 10000]
        [--results 50000] [--workers 2] [--paths 500] [--seconds 4] [--rate R ...] [--out DIR]

For each database: a hub seeded with ``--recipes`` recipes and ``--results`` results (through the
hub's own import path on SQLite; PostgreSQL gets a copy of those rows), served by
`rigbook hub serve --workers N`; beside it the baseline (benchmarks/hub/baseline.py), uvicorn with
the same workers, loop and HTTP parser, answering from a dict the bytes the hub answered for the
same paths. Each target draws its requests from ``--paths`` paths picked at random: the JSON of a
recipe, the page of a recipe, and a leaderboard page with random filters and offsets. Every path is
read from the hub eight times over eight connections first (the baseline's bytes, and each hub worker's
first reads), so the ladder measures a hub that has answered those reads since the last write.

Then a ladder of open-loop rates (request i due at start + i/rate, latency counted from when it was
due), hub and baseline alternately at each rate, each until it first misses p99 <= ``--p99-ms``
with 0 errors. The table gives each target's highest rate that held, for the hub and the baseline,
and their ratio. The load generator runs on the same machine, so both rates include its cost.
Under the table, per database, the time of one publish (a new revision of a seeded recipe, written
and rendered in its transaction, on the hub the ladders read; measured after them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from sqlalchemy import create_engine, delete, insert, select, text

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load

from rigbook.hub.app import create_app
from rigbook.hub.models import Base
from rigbook.hub.repository import put_recipe
from tests.conftest import free_port

RATES = (100, 200, 400, 700, 1000, 1400, 2000, 2800, 4000)
WARM_CONNECTIONS = 8
PUBLISHES = 5


def copy_to_postgres(sqlite_url: str, pg_url: str) -> None:
    """Every row of the seeded SQLite hub into a migrated PostgreSQL hub (ids kept), in place of
    the rows it starts with (its empty board's prepared pages)."""
    create_app(pg_url, load_builtin=False).state.engine.dispose()
    source, target = create_engine(sqlite_url), create_engine(pg_url)
    with source.connect() as read, target.begin() as write:
        for table in reversed(Base.metadata.sorted_tables):
            write.execute(delete(table))
        for table in Base.metadata.sorted_tables:
            rows = [dict(r) for r in read.execute(select(table)).mappings()]
            for first in range(0, len(rows), 5000):
                write.execute(insert(table), rows[first : first + 5000])
            if "id" in table.c and rows:
                write.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), :n)"),
                    {"n": max(r["id"] for r in rows)},
                )
    with target.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))
    source.dispose()
    target.dispose()


def sample_paths(recipes: int, count: int) -> dict[str, list[str]]:
    rng = random.Random(7)
    slugs = [f"load-{i:05d}" for i in rng.sample(range(recipes), min(count, recipes))]

    def board() -> str:
        model = f"model-{rng.randrange(load.MODELS)}"
        return rng.choice(
            [
                "/api/v1/leaderboard.json",
                f"/api/v1/leaderboard.json?model={model}",
                f"/api/v1/leaderboard.json?offset={rng.randrange(0, 5000)}&limit=50",
                f"/api/v1/leaderboard.json?model={model}&evidence=measured",
            ]
        )

    return {
        "recipe JSON": [f"/api/v1/recipes/{s}.json" for s in slugs],
        "recipe page": [f"/r/{s}" for s in slugs],
        "leaderboard JSON": sorted({board() for _ in range(count)}),
    }


async def warm(url: str, paths: list[str]) -> dict[str, tuple[str, bytes]]:
    """Read every path several times, each read on a fresh connection; the hub's answers (content
    type, body). Fresh connections, because a kept one stays with the worker that accepted it: a
    few connections opened at once may all land on one worker and leave the other cold."""
    answers: dict[str, tuple[str, bytes]] = {}
    fresh = httpx.Limits(max_keepalive_connections=0)

    async def one(order: list[str]) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=fresh) as client:
            for path in order:
                got = await client.get(path)
                if got.status_code != 200:
                    raise RuntimeError(f"the hub answered {path} with {got.status_code}")
                answers.setdefault(path, (got.headers["content-type"], got.content))

    orders = [random.Random(n).sample(paths, len(paths)) for n in range(WARM_CONNECTIONS)]
    await asyncio.gather(*(one(o) for o in orders))
    return answers


def serve_baseline(answers_file: Path, workers: int, probe: str) -> tuple[str, subprocess.Popen]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "benchmarks.hub.baseline:app",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        env=os.environ | {"RIGBOOK_BASELINE_ANSWERS": str(answers_file)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            httpx.get(url + probe, timeout=2).raise_for_status()
            return url, proc
        except httpx.HTTPError:
            time.sleep(0.3)
    raise RuntimeError("the baseline did not start")


def holds(row: dict, p99_ms: float) -> bool:
    return row["errors"] == 0 and row["p99_ms"] <= p99_ms


def ladders(
    servers: dict[str, tuple[str, int]], name: str, paths: list[str], rates: list[float], args
) -> list[dict]:
    """Hub and baseline alternately at each rate, each until it first misses; every row run, with
    the server's CPU time per answered request (its cost, however busy the machine)."""
    rows, going = [], set(servers)
    for rate in rates:
        for server in [s for s in servers if s in going]:
            url, pid = servers[server]
            load.drain(url, 15)
            rng = random.Random(int(rate))
            target = load.Target(name, lambda rng=rng: rng.choice(paths))
            cpu = load.server_cpu(pid)
            row = asyncio.run(load.open_loop(url, target, rate, args.seconds))
            answered = max(1, row["sent"] - row["errors"])
            row["server"] = server
            row["server_cpu_ms_per_request"] = 1000 * (load.server_cpu(pid) - cpu) / answered
            rows.append(row)
            print(
                f"  {name:16} {server:8} {rate:6g}/s p99 {row['p99_ms']:8.1f} ms "
                f"errors {row['errors']} cpu {row['server_cpu_ms_per_request']:.3f} ms/req "
                f"load {row['load']:.1f}",
                file=sys.stderr,
                flush=True,
            )
            if not holds(row, max(args.p99_ms)):
                going.discard(server)
        if not going:
            break
    return rows


def best(rows: list[dict], server: str, p99_ms: float) -> float:
    """The highest rate that held before the server's first miss (0 when the first rate missed)."""
    top = 0.0
    for row in (r for r in rows if r["server"] == server):
        if not holds(row, p99_ms):
            break
        top = row["rate"]
    return top


def publish_ms(url: str, recipes: int, results: int) -> float:
    """Median wall ms of one publish on the hub at ``url``, in this process: a new revision of a
    seeded recipe (its summary changed), written and rendered (its JSON and page, the board's
    default pages) in its transaction, over :data:`PUBLISHES` recipes."""
    app = create_app(url, load_builtin=False, migrate=False)
    spent = []
    for i in range(min(PUBLISHES, recipes)):
        changed = load.record(i, results // recipes) | {"summary": f"published again ({i})"}
        started = time.perf_counter()
        put_recipe(app.state.sessions, changed)
        spent.append(time.perf_counter() - started)
    app.state.engine.dispose()
    return statistics.median(spent) * 1000


def run_db(db: str, args, root: Path, seeded: Path) -> tuple[list[dict], float]:
    """The ladder steps on ``db``, and the time of one publish on it (:func:`publish_ms`)."""
    stop_pg = None
    sqlite_url = f"sqlite:///{seeded}"
    try:
        if db == "sqlite":
            url = sqlite_url
        else:
            # its own folder: PostgreSQL runs as another user, who cannot enter ``root``
            pg_root = Path(tempfile.mkdtemp(prefix="rigbook-bench-hub-pg-"))
            url, stop = load.start_postgres(pg_root)

            def stop_pg() -> None:
                stop()
                shutil.rmtree(pg_root, ignore_errors=True)

            started = time.monotonic()
            copy_to_postgres(sqlite_url, url)
            print(f"copied to PostgreSQL in {time.monotonic() - started:.0f} s", file=sys.stderr)
        hub_url, hub = load.serve(url, args.workers)
        base = None
        try:
            samples = sample_paths(args.recipes, args.paths)
            answers: dict[str, tuple[str, bytes]] = {}
            started = time.monotonic()
            for paths in samples.values():
                answers |= asyncio.run(warm(hub_url, paths))
            print(f"warmed in {time.monotonic() - started:.0f} s", file=sys.stderr)
            answers_file = root / f"answers-{db}.pickle"
            answers_file.write_bytes(pickle.dumps(answers))
            base_url, base = serve_baseline(answers_file, args.workers, next(iter(answers)))
            out = []
            for name, paths in samples.items():
                rows = ladders(
                    {"hub": (hub_url, hub.pid), "baseline": (base_url, base.pid)},
                    name,
                    paths,
                    args.rate or list(RATES),
                    args,
                )
                for row in rows:
                    row["db"] = db
                out += rows
        finally:
            for proc in (hub, base):
                if proc is not None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=30)
        if db == "sqlite":  # on a copy: the seeded hub is what PostgreSQL gets next
            shutil.copyfile(seeded, root / "publish.sqlite3")
            url = f"sqlite:///{root / 'publish.sqlite3'}"
        took = publish_ms(url, args.recipes, args.results)
        print(f"{db}: one publish {took:.1f} ms", file=sys.stderr)
        return out, took
    finally:
        if stop_pg:
            stop_pg()


def cpu(rows: list[dict], server: str) -> float:
    """Median CPU ms per request of the server's rows."""
    costs = sorted(r["server_cpu_ms_per_request"] for r in rows if r["server"] == server)
    return costs[len(costs) // 2] if costs else float("nan")


def table(rows: list[dict], bounds: list[float]) -> str:
    """Per database and target: the highest rate each held at each p99 bound, the ratio, the CPU."""
    head = "| database | target |"
    rule = "|---|---|"
    for bound in bounds:
        head += f" hub rate/s at p99 <= {bound:g} ms | baseline | ratio |"
        rule += "---:|---:|---:|"
    lines = [head + " hub CPU ms/req | baseline CPU ms/req |", rule + "---:|---:|"]
    verdicts = []
    for db in dict.fromkeys(r["db"] for r in rows):
        for name in dict.fromkeys(r["target"] for r in rows if r["db"] == db):
            mine = [r for r in rows if r["db"] == db and r["target"] == name]
            line = f"| {db} | {name} |"
            for n, bound in enumerate(bounds):
                hub, base = best(mine, "hub", bound), best(mine, "baseline", bound)
                ratio = hub / base if base else None
                if n == 0:
                    verdicts.append(ratio)
                shown = f"{ratio:.2f}" if ratio is not None else "n/a"
                line += f" {hub:g} | {base:g} | {shown} |"
            lines.append(line + f" {cpu(mine, 'hub'):.3f} | {cpu(mine, 'baseline'):.3f} |")
    held = all(r is not None and r >= 0.5 for r in verdicts)
    lines.append("")
    lines.append(
        f"every ratio at p99 <= {bounds[0]:g} ms >= 0.5: {'yes' if held else 'no'}"
        + ("" if all(r is not None for r in verdicts) else " (n/a: the baseline held no rate)")
    )
    return "\n".join(lines)


def published(publishes: dict[str, float]) -> str:
    """The time of one publish per database, as lines under the table."""
    return "\n".join(
        f"one publish on {db} (a recipe revision, written and rendered; median of "
        f"{PUBLISHES}): {ms:.1f} ms"
        for db, ms in publishes.items()
    )


def git(*argv: str) -> str:
    done = subprocess.run(["git", *argv], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def machine() -> dict:
    """What the figures were measured on: cores, CPU model, memory, Python."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    return {
        "host": os.uname().nodename,
        "cores": os.cpu_count(),
        "cpu": model,
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": sys.version.split()[0],
        "platform": sys.platform,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=("sqlite", "postgresql"), action="append")
    ap.add_argument("--recipes", type=int, default=10_000)
    ap.add_argument("--results", type=int, default=50_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--paths", type=int, default=500, help="distinct paths per target")
    ap.add_argument("--seconds", type=float, default=4, help="seconds per rate")
    ap.add_argument("--rate", type=float, action="append", help="the ladder's rates (repeatable)")
    ap.add_argument(
        "--p99-ms",
        type=float,
        action="append",
        help="p99 bound in ms (repeatable: the first is the verdict's; default 10)",
    )
    ap.add_argument(
        "--seeded",
        type=Path,
        help="a SQLite hub seeded by an earlier run: used when it exists, else seeded and kept",
    )
    ap.add_argument("--out", type=Path, help="a folder for rows.json and table.md")
    args = ap.parse_args()
    args.p99_ms = args.p99_ms or [10.0]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    commit, dirty = git("rev-parse", "HEAD"), bool(git("status", "--porcelain"))  # what runs
    load_before = list(os.getloadavg())
    root = Path(tempfile.mkdtemp(prefix="rigbook-bench-hub-"))
    try:
        seeded = root / "hub.sqlite3"
        if args.seeded and args.seeded.exists():
            shutil.copyfile(args.seeded, seeded)
            print(f"seeded hub copied from {args.seeded}", file=sys.stderr)
            # An earlier run's hub: migrated, and its answers prepared by this code, before copying.
            create_app(f"sqlite:///{seeded}", load_builtin=False).state.engine.dispose()
        else:
            print(
                f"seeding {args.recipes} recipes, {args.results} results ...",
                file=sys.stderr,
                flush=True,
            )
            took = load.seed(f"sqlite:///{seeded}", args.recipes, args.results)
            print(f"seeded in {took:.0f} s", file=sys.stderr)
            if args.seeded:
                shutil.copyfile(seeded, args.seeded)
        rows: list[dict] = []
        publishes: dict[str, float] = {}
        for db in args.db or ["sqlite", "postgresql"]:
            steps, publishes[db] = run_db(db, args, root, seeded)
            rows += steps
            if args.out:  # each database's rows as soon as they are measured
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "rows.json").write_text(json.dumps(rows, indent=1) + "\n")
        shown = table(rows, args.p99_ms) + "\n\n" + published(publishes)
        print(
            f"\n{args.workers} workers, {args.recipes} recipes, {args.results} results, "
            f"{args.paths} paths per target, {args.seconds:g} s per rate\n"
        )
        print(shown)
        if args.out:
            (args.out / "table.md").write_text(shown + "\n")
            # The layout every run folder under benchmarks/runs keeps (scripts/benchmarks_index.py).
            after = list(os.getloadavg())
            host = machine()
            manifest = {
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
                "rigbook_commit": commit + (" (with uncommitted changes)" if dirty else ""),
                "machine": ", ".join(f"{k} {v}" for k, v in host.items()),
                "load_before": " ".join(f"{x:.2f}" for x in load_before),
                "load_after": " ".join(f"{x:.2f}" for x in after),
                "started_utc": started,
                "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "settings": {
                    k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                },
                "files": {
                    "table.md": "the table the command printed",
                    "rows.json": "every ladder step: server, target, rate, sent, errors, p50/p99/max "
                    "ms, achieved rate, the server's CPU ms per answered request, the client's "
                    "CPU share, the load average at its end",
                },
                "publish_ms": publishes,
            }
            (args.out / "run.json").write_text(json.dumps(manifest, indent=1) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
