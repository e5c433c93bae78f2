"""Hub fixtures: the same tests run on SQLite and on a real PostgreSQL the fixture starts itself.

PostgreSQL: ``initdb`` and ``pg_ctl`` in a temporary directory on a free port,
as a non-root user (``postgres`` when it exists, else one made with
``useradd``), since PostgreSQL refuses to run as root. Each test gets a fresh
database.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rigbook.hub.app import create_app
from rigbook.hub.auth import create_token
from rigbook.hub.rates import Limits, Rate
from tests.conftest import free_port

PG_USER_FALLBACK = "rigbook-pg"
# Limits no test meets unless it sets its own.
GENEROUS = Limits(writes_per_token=Rate(limit=10**6), auth_failures_per_address=Rate(limit=10**6))


def _pg_account() -> tuple[int, int] | None:
    """uid/gid to run PostgreSQL as: None when not root (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", PG_USER_FALLBACK):
        try:
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
        except KeyError:
            continue
    subprocess.run(
        [
            "useradd",
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            PG_USER_FALLBACK,
        ],
        check=True,
        capture_output=True,
    )
    entry = pwd.getpwnam(PG_USER_FALLBACK)
    return entry.pw_uid, entry.pw_gid


@dataclass
class PgServer:
    port: int

    def admin_url(self) -> str:
        return f"postgresql://rigbook@127.0.0.1:{self.port}/postgres"

    def new_database(self) -> str:
        """A fresh, empty database; its SQLAlchemy URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://rigbook@127.0.0.1:{self.port}/{name}"


def _pg_bin(name: str) -> str:
    """A PostgreSQL program: on PATH, or where Debian's packages put it (/usr/lib/postgresql/N/bin)."""
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    if not found:
        pytest.fail(f"PostgreSQL's {name} was not found: install postgresql (`make system-deps`)")
    return found


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server for this test session (trust auth on loopback only)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    account = _pg_account()
    root = Path(tempfile.mkdtemp(prefix="rigbook-pg-"))
    if account:
        os.chown(root, *account)
    as_user = {"user": account[0], "group": account[1]} if account else {}
    data, port = root / "data", free_port()
    subprocess.run(
        [
            initdb,
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
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
    )
    started = subprocess.run(
        [
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(root / "log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        ],
        capture_output=True,
        text=True,
        cwd=root,
        **as_user,
    )
    if started.returncode != 0:
        log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
        pytest.fail(f"PostgreSQL did not start: {started.stderr}\n{log[-2000:]}")
    try:
        yield PgServer(port)
    finally:
        subprocess.run(
            [pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            cwd=root,
            **as_user,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    """A fresh database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'hub.sqlite3'}"
    return request.getfixturevalue("pg_server").new_database()


@dataclass
class Hub:
    """An app, a test client and a write token."""

    app: object
    client: TestClient
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def make_hub(db_url):
    """Build hubs on the test's database: ``make_hub(load_builtin=…, max_body=…, limits=…)``."""
    made = []

    def build(**options) -> Hub:
        app = create_app(db_url, **({"limits": GENEROUS} | options))
        made.append(app)
        return Hub(app, TestClient(app), create_token(app.state.sessions, f"test-{len(made)}"))

    yield build
    for app in made:
        app.state.engine.dispose()


@pytest.fixture
def hub(make_hub) -> Hub:
    """A hub with the built-in catalog."""
    return make_hub()
