"""A read after a write, on either worker of `rigbook hub serve --workers 2`, shows the write once
the stated bound (the version check's interval, docs/hub.md) has passed since the write answered.

Each read is a fresh connection; which worker accepted it is read from the kernel (the worker that
holds the server's end of that connection), and reads go on until both workers have answered.
"""

from __future__ import annotations

import http.client
import time

import httpx
import psutil

from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from rigbook.hub.freshness import DEFAULT_INTERVAL_S
from tests.conftest import free_port
from tests.hub.helpers import served_workers

SLUG = "fresh-across-workers"
PATHS = (
    f"/api/v1/recipes/{SLUG}.json",
    f"/r/{SLUG}",
    f"/api/v1/leaderboard.json?recipe={SLUG}",
    f"/api/v1/leaderboard.json?recipe={SLUG}&offset=1&limit=1",
    # the board's default pages, which the write prepares (the recipe is on their first page)
    "/api/v1/leaderboard.json",
    "/leaderboard",
)
MAX_READS = 200


def _worker_of(workers: list[psutil.Process], port: int, client_port: int) -> int:
    """The pid of the worker holding the server's end of the connection from ``client_port``."""
    for worker in workers:
        for conn in worker.net_connections(kind="tcp"):
            if (
                conn.laddr
                and conn.laddr.port == port
                and conn.raddr
                and conn.raddr.port == client_port
            ):
                return worker.pid
    raise AssertionError(f"no worker holds the connection from port {client_port}")


def _read(port: int, path: str, workers: list[psutil.Process]) -> tuple[int, bytes]:
    """``(worker pid, body)`` of one GET on a fresh connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.request("GET", path)
        reply = conn.getresponse()
        body = reply.read()
        assert reply.status == 200, (path, reply.status, body[:300])
        return _worker_of(workers, port, conn.sock.getsockname()[1]), body
    finally:
        conn.close()


def _reads_from_both(port: int, path: str, workers: list[psutil.Process]) -> dict[int, list[bytes]]:
    """Bodies by worker, read on fresh connections until both workers answered."""
    seen: dict[int, list[bytes]] = {}
    for _ in range(MAX_READS):
        pid, body = _read(port, path, workers)
        seen.setdefault(pid, []).append(body)
        if len(seen) == 2:
            return seen
    raise AssertionError(f"one worker answered all {MAX_READS} reads of {path}")


def test_a_write_shows_on_both_workers_within_the_stated_bound(tmp_path, seed_record):
    port, db = free_port(), f"sqlite:///{tmp_path / 'hub.sqlite3'}"
    made = create_app(db)
    token = create_token(made.state.sessions, "w")
    made.state.engine.dispose()
    url, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    before, after = seed_record | {"slug": SLUG, "title": "Before the write"}, "After the write"
    with served_workers(db, port) as proc:
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert httpx.post(f"{url}/api/v1/recipes", json=before, headers=auth).status_code == 201
        time.sleep(DEFAULT_INTERVAL_S)
        # Both workers hold every answer from before the write.
        for path in PATHS:
            for pid, bodies in _reads_from_both(port, path, workers).items():
                assert all(b"Before the write" in b for b in bodies), (path, pid)
        answer = httpx.post(f"{url}/api/v1/recipes", json=before | {"title": after}, headers=auth)
        assert answer.status_code == 201
        time.sleep(DEFAULT_INTERVAL_S)  # the bound, counted from the write's answer
        for path in PATHS:
            for pid, bodies in _reads_from_both(port, path, workers).items():
                assert all(after.encode() in b for b in bodies), (path, pid)
                assert all(b"Before the write" not in b for b in bodies), (path, pid)
