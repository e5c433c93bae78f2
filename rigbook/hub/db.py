"""Opening the hub database: a SQLite file by default, PostgreSQL by URL.

SQLite serialises writers with ``BEGIN IMMEDIATE`` and a busy timeout, so two
requests that number revisions never interleave their read and write; on
PostgreSQL the repository locks the recipe row instead (``SELECT … FOR UPDATE``).
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from rigbook.errors import EnvironmentProblem
from rigbook.home import rigbook_home

SQLITE_BUSY_TIMEOUT_S = 30


def default_db_url() -> str:
    """``sqlite:///RIGBOOK_HOME/hub.sqlite3``."""
    return f"sqlite:///{rigbook_home() / 'hub.sqlite3'}"


def _sqlite_serialised(engine: Engine) -> None:
    """Make every SQLite transaction take the write lock at its start (waiting up to the busy timeout)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        # Hand transaction control to the "begin" hook below instead of pysqlite's implicit BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(db_url: str | None = None) -> Engine:
    """An engine for ``db_url`` (default: the SQLite file under RIGBOOK_HOME); a bad URL raises E_DB."""
    url_text = db_url or default_db_url()
    try:
        url = make_url(url_text)
        if url.get_backend_name() == "sqlite":
            engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})
            _sqlite_serialised(engine)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except (ArgumentError, SQLAlchemyError, ImportError, ValueError) as exc:
        raise EnvironmentProblem("E_DB", f"cannot use database URL {url_text!r}: {exc}") from None
    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects readable after commit."""
    return sessionmaker(engine, expire_on_commit=False)
