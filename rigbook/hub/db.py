"""Opening the hub database: a SQLite file by default, PostgreSQL by URL.

SQLite runs in WAL mode with a busy timeout. Reads open deferred transactions
(``BEGIN``): in WAL a reader sees the last committed state and never waits for
a writer. Writes open with ``BEGIN IMMEDIATE`` (:func:`writing`), so writers queue for the one write lock at their start
and two requests that number revisions never interleave their read and write;
readers carry on meanwhile. On PostgreSQL the repository locks the recipe row
instead (``SELECT … FOR UPDATE``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from rigbook.errors import EnvironmentProblem
from rigbook.home import rigbook_home

SQLITE_BUSY_TIMEOUT_S = 10
WRITE_OPTION: Final = "rigbook_write"


def default_db_url() -> str:
    """``sqlite:///RIGBOOK_HOME/hub.sqlite3``."""
    return f"sqlite:///{rigbook_home() / 'hub.sqlite3'}"


def _sqlite_pragmas(engine: Engine) -> None:
    """WAL, a busy timeout, foreign keys; deferred reads and immediate writes."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        # Hand transaction control to the "begin" hook below instead of pysqlite's implicit BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(db_url: str | None = None) -> Engine:
    """An engine for ``db_url`` (default: the SQLite file under RIGBOOK_HOME); a bad URL raises E_DB."""
    url_text = db_url or default_db_url()
    try:
        url = make_url(url_text)
        if url.get_backend_name() == "sqlite":
            engine = create_engine(
                url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False}
            )
            _sqlite_pragmas(engine)
        else:
            engine = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    except (ArgumentError, SQLAlchemyError, ImportError, ValueError) as exc:
        raise EnvironmentProblem("E_DB", f"cannot use database URL {url_text!r}: {exc}") from None
    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects readable after commit; their transactions are reads
    (deferred on SQLite) unless opened with :func:`writing`."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def writing(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session in a write transaction, committed on success: on SQLite it takes the write lock
    at its start (``BEGIN IMMEDIATE``), waiting up to the busy timeout for another writer."""
    with factory() as session, session.begin():
        session.connection(execution_options={WRITE_OPTION: True})
        yield session
