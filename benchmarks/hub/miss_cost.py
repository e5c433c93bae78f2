"""CPU per request of each way a hub worker answers a read (docs/hub.md, "How a read is answered").

    PYTHONPATH=. python benchmarks/hub/miss_cost.py [--db URL] [--repeat 200]

On a hub (``--db``, default a fresh SQLite one with the built-in catalog; a hub `bench_hub.py
--seeded` made serves too), the app is called in-process as uvicorn would call it, with no
network: per request kind, the median CPU time (``time.process_time``) of a request answered

- held: the worker sent this answer since the version it read;
- prepared: a recipe's JSON or page the worker does not hold (one indexed read);
- board: a leaderboard page of a board the worker does not hold (one query for the whole board);
- board slice: another page of a board the worker holds;

and, for comparison, rendering the recipe's page from the database (what a write now does once).
A worker's holdings are dropped before each miss; the write version is read once, not per request.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI
from sqlalchemy import select

from rigbook.hub.answers import AnswerStore
from rigbook.hub.app import create_app
from rigbook.hub.boards import RankedBoards
from rigbook.hub.freshness import VersionGate
from rigbook.hub.models import RecipeRow
from rigbook.hub.pages import render_page
from rigbook.hub.repository import get_record_text


async def get(app: FastAPI, path: str) -> int:
    """Status of one GET of ``path`` through the whole app."""
    raw_path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": raw_path,
        "raw_path": raw_path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"hub.local")],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    status = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    return status[0]


def median_ms(run: Callable[[], None], repeat: int) -> float:
    spent = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        spent.append(time.process_time() - start)
    return statistics.median(spent) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", help="hub database URL (default: a fresh SQLite hub)")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    db = args.db or f"sqlite:///{Path(tempfile.mkdtemp(prefix='rigbook-miss-')) / 'hub.sqlite3'}"
    app = create_app(db)
    app.state.version = VersionGate(app.state.sessions, interval_s=3600)  # one version read
    loop = asyncio.new_event_loop()
    with app.state.sessions() as session:
        slug = session.scalars(select(RecipeRow.slug).order_by(RecipeRow.slug)).first()
    if slug is None:
        sys.exit("the hub holds no recipe")

    def ask(path: str, drop: Callable[[], None] | None = None) -> Callable[[], None]:
        def run() -> None:
            if drop is not None:
                drop()
            assert loop.run_until_complete(get(app, path)) == 200, path

        return run

    def drop_answers() -> None:
        app.state.answers = AnswerStore()

    def drop_all() -> None:
        drop_answers()
        app.state.boards = RankedBoards(app.state.sessions)

    def render() -> None:
        with app.state.sessions() as session:
            found = get_record_text(session, slug)
            assert found is not None
            render_page(session, slug, found[2])

    board = "/api/v1/leaderboard.json?offset=40&limit=50"
    kinds = {
        "recipe JSON, held": ask(f"/api/v1/recipes/{slug}.json"),
        "recipe JSON, prepared": ask(f"/api/v1/recipes/{slug}.json", drop_answers),
        "recipe page, held": ask(f"/r/{slug}"),
        "recipe page, prepared": ask(f"/r/{slug}", drop_answers),
        "recipe page, rendered from the database": render,
        "leaderboard JSON, held": ask(board),
        "leaderboard JSON, board slice": ask(board, drop_answers),
        "leaderboard JSON, board": ask(board, drop_all),
    }
    print(
        f"hub: {db}\nrecipe: {slug}\n\n| request | CPU ms (median of {args.repeat}) |\n|---|---:|"
    )
    for name, run in kinds.items():
        run()  # once before timing: the held kinds then hold their answer
        print(f"| {name} | {median_ms(run, args.repeat):.3f} |", flush=True)
    app.state.engine.dispose()


if __name__ == "__main__":
    main()
