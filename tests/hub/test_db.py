"""Reads never wait for a writer, and a database failure is answered in the error shape (E_DB)."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import text

import rigbook.hub.db
import rigbook.hub.repository
from rigbook.hub.rates import Limits, Rate
from tests.hub.helpers import SMALL_SLUG, live_hub

READS = (
    "/api/v1/recipes",
    f"/api/v1/recipes/{SMALL_SLUG}.json",
    "/api/v1/leaderboard.json",
    f"/r/{SMALL_SLUG}",
    "/leaderboard",
    "/",
)


def sqlite_path(url: str) -> str:
    return url.removeprefix("sqlite:///")


def test_reads_answer_while_an_outside_writer_holds_the_lock(hub, db_url):
    """An outside process holds the write lock (SQLite) or a recipe's row lock (PostgreSQL) for the whole run."""
    if db_url.startswith("sqlite"):
        outside = sqlite3.connect(sqlite_path(db_url), isolation_level=None)
        outside.execute("BEGIN IMMEDIATE")
        outside.execute("UPDATE recipes SET title = title WHERE slug = ?", (SMALL_SLUG,))
    else:
        outside = hub.app.state.engine.connect()
        outside.begin()
        outside.execute(text("SELECT * FROM recipes WHERE slug = :s FOR UPDATE"), {"s": SMALL_SLUG})
    try:
        with live_hub(hub.app) as url, ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda path: httpx.get(url + path, timeout=5), READS * 20))
    finally:
        outside.rollback()
        outside.close()
    assert {a.status_code for a in answers} == {200}


def test_a_write_that_cannot_get_the_lock_is_E_DB_in_the_error_shape(
    make_hub, db_url, seed_record, monkeypatch
):
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL writers wait on row locks, not on a database-wide lock")
    monkeypatch.setattr(rigbook.hub.db, "SQLITE_BUSY_TIMEOUT_S", 0.2)
    hub = make_hub()
    outside = sqlite3.connect(sqlite_path(db_url), isolation_level=None)
    outside.execute("BEGIN IMMEDIATE")
    try:
        answer = hub.client.post(
            "/api/v1/recipes", json=seed_record | {"title": "blocked"}, headers=hub.auth
        )
        read = hub.client.get(f"/api/v1/recipes/{SMALL_SLUG}.json")
    finally:
        outside.rollback()
        outside.close()
    assert answer.status_code == 503 and answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["code"] == "E_DB" and answer.headers["retry-after"] == "1"
    assert read.status_code == 200


def test_a_database_that_went_away_is_E_DB(make_hub, db_url):
    hub = make_hub()
    hub.app.state.engine.dispose()
    if db_url.startswith("sqlite"):
        with hub.app.state.engine.begin() as conn:
            conn.execute(text("DROP TABLE board"))
    else:
        with hub.app.state.engine.begin() as conn:
            conn.execute(text("DROP TABLE board"))
    # a board page its write did not prepare reads the board table (the default one is prepared)
    answer = hub.client.get("/api/v1/leaderboard.json?offset=0")
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "E_DB"


def test_writes_stay_serialised_and_reads_flow_under_concurrent_writes(hub, seed_record):
    stop = threading.Event()
    with live_hub(hub.app) as url:

        def write(i: int) -> int:
            return httpx.post(
                f"{url}/api/v1/recipes",
                json=seed_record | {"title": f"v{i}"},
                headers=hub.auth,
                timeout=30,
            ).status_code

        def read(_: int) -> int:
            return httpx.get(f"{url}/api/v1/recipes/{SMALL_SLUG}.json", timeout=30).status_code

        with ThreadPoolExecutor(12) as pool:
            writes = pool.map(write, range(10))
            reads = pool.map(read, range(60))
            assert set(writes) == {201} and set(reads) == {200}
        stop.set()
        numbers = [
            r["no"]
            for r in httpx.get(f"{url}/api/v1/recipes/{seed_record['slug']}/revisions").json()[
                "revisions"
            ]
        ]
    assert numbers == list(range(2, 13))


def test_a_write_waits_for_the_lock_once_not_once_per_attempt(
    make_hub, db_url, seed_record, monkeypatch
):
    """The busy timeout is the whole wait: a write that could not take the lock is not tried again
    (each try would wait the timeout anew, 20 tries in all)."""
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL writers wait on row locks, not on a database-wide lock")
    monkeypatch.setattr(rigbook.hub.db, "SQLITE_BUSY_TIMEOUT_S", 0.1)
    attempts = []
    real_writing = rigbook.hub.repository.writing

    def counted(factory):
        attempts.append(1)
        return real_writing(factory)

    monkeypatch.setattr(rigbook.hub.repository, "writing", counted)
    hub = make_hub(
        limits=Limits(writes_per_token=Rate(limit=0), auth_failures_per_address=Rate(limit=0))
    )
    attempts.clear()  # the catalog's import
    outside = sqlite3.connect(sqlite_path(db_url), isolation_level=None)
    outside.execute("BEGIN IMMEDIATE")
    try:
        answer = hub.client.post(
            "/api/v1/recipes", json=seed_record | {"title": "blocked"}, headers=hub.auth
        )
    finally:
        outside.rollback()
        outside.close()
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "E_DB"
    assert len(attempts) == 1
