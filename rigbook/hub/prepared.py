"""Answers prepared at write time: a recipe's JSON and its page, and the board's default pages,
rendered once by the write that changes them and stored with their ETags in the ``prepared``
table, in that write's transaction.

A write marks the recipes it changed (:func:`rigbook.hub.repository.touch`); before its
transaction commits, each one's JSON and page are rendered and stored (:func:`watch`), with the
write version the transaction bumped. Every such write replaced board rows and bumped the version,
so the board's default pages (no query string: the JSON's first page and the HTML board's first
page) are rendered again too (:func:`prepare_board`). So the prepared bytes, the board and the
version change together, or not at all. A read a worker does not hold in memory
(:mod:`rigbook.hub.answers`) is one indexed read of this table (:class:`PreparedReader`, the
driver's own connection, no ORM), never a rendering.

The JSON board's ``next`` link is absolute, of the request's scheme and host: the write stores that
document up to the link (it ends with :data:`OPEN_NEXT`) and the read ends it (:func:`finish_board`).

Rows carry the renderer that made them (:data:`MADE_BY`, a digest of the hub's code and
templates): a hub that starts on rows another renderer made, or on recipes with none, prepares
them again before it serves, and the board's default pages always (:func:`prepare_stale`). A
page that fails to render leaves no row, and its route renders it on each read instead (which then
answers what the failure was).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import to_json
from sqlalchemy import Engine, delete, event, insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import Request

from rigbook import __version__
from rigbook.hub import repository as repo
from rigbook.hub.api import BOARD_LIMIT, BoardPage
from rigbook.hub.db import writing
from rigbook.hub.leaderboard import (
    BoardFilters,
    board_etag,
    board_head,
    board_items,
    board_version,
    recount,
)
from rigbook.hub.models import PreparedRow, RecipeRow
from rigbook.hub.pages import BOARD_PAGE, board_html, render_page
from rigbook.hub.paths import (
    BOARD_HTML,
    BOARD_JSON,
    JSON_TYPE,
    PAGE_TYPE,
    json_path,
    page_etag,
    page_path,
    recipe_etag,
)

STALE_BATCH = 200
BOARD_PATHS = (BOARD_JSON, BOARD_HTML)
OPEN_NEXT = b'"next":'


def _made_by() -> str:
    # A page's bytes depend on code outside the hub too (claims, SLOs, curves, the result and
    # recipe models), and a source install keeps one version across commits: hash all of rigbook.
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).parent.parent
    for path in sorted([*package.rglob("*.py"), *package.glob("hub/templates/*")]):
        digest.update(str(path.relative_to(package)).encode() + path.read_bytes())
    return digest.hexdigest()[:32]


MADE_BY = _made_by()


class Prepared(BaseModel):
    """One prepared answer: its ETag, content type and body."""

    etag: str
    content_type: str
    body: bytes
    version: int


def prepare(session: Session, slugs: Iterable[str]) -> None:
    """Render and store the JSON and page of each of ``slugs`` under this transaction's version."""
    version = board_version(session)
    rows: list[dict[str, object]] = []
    paths: list[str] = []
    for slug in sorted(set(slugs)):
        paths += [json_path(slug), page_path(slug)]
        found = repo.get_record_text(session, slug)
        if found is None:
            continue
        no, digest, text = found
        body = text.encode()
        rows.append(
            {"path": json_path(slug), "etag": recipe_etag(no, digest), "content_type": JSON_TYPE}
            | {"body": body, "version": version, "made_by": MADE_BY}
        )
        try:
            page = render_page(session, slug, text)
        except Exception:  # noqa: BLE001 — no stored value may stop the write; the route renders it
            continue
        rows.append(
            {"path": page_path(slug), "etag": page_etag(page), "content_type": PAGE_TYPE}
            | {"body": page, "version": version, "made_by": MADE_BY}
        )
    if paths:
        session.execute(delete(PreparedRow).where(PreparedRow.path.in_(paths)))
    if rows:
        session.execute(insert(PreparedRow), rows)


def prepare_board(session: Session) -> None:
    """Render and store the board's default pages under this transaction's version."""
    version = board_version(session)
    session.execute(delete(PreparedRow).where(PreparedRow.path.in_(BOARD_PATHS)))
    filters = BoardFilters()
    total, ids = board_head(session, max(BOARD_LIMIT, BOARD_PAGE))
    try:
        items = board_items(session, ids)
        listed = items[:BOARD_LIMIT]
        document = BoardPage(
            metric=filters.metric, items=listed, total=total, limit=BOARD_LIMIT, offset=0, next=None
        ).model_dump_json()
        page = board_html(filters, 1, total, items[:BOARD_PAGE])
    except SQLAlchemyError:
        raise  # the transaction failed: the write fails with it
    except Exception:  # noqa: BLE001 — no stored value may stop the write; the routes render it
        return
    body = document.encode()
    if len(listed) < total:  # there is a next page: its link is the request's (finish_board)
        body = body.removesuffix(b"null}")
    etag = board_etag(version, filters, BOARD_LIMIT, 0)
    made = {"version": version, "made_by": MADE_BY}
    rows = [
        {"path": BOARD_JSON, "etag": etag, "content_type": JSON_TYPE, "body": body} | made,
        {"path": BOARD_HTML, "etag": page_etag(page), "content_type": PAGE_TYPE, "body": page}
        | made,
    ]
    session.execute(insert(PreparedRow), rows)


def finish_board(found: Prepared, request: Request) -> Prepared:
    """The JSON board's first page for ``request``: the prepared document ended with its own
    ``next`` link, as the route writes it (:func:`rigbook.hub.api.next_url`)."""
    if not found.body.endswith(OPEN_NEXT):
        return found
    link = request.url.include_query_params(offset=BOARD_LIMIT, limit=BOARD_LIMIT)
    return found.model_copy(update={"body": found.body + to_json(str(link)) + b"}"})


def watch(sessions: sessionmaker[Session]) -> None:
    """Prepare, before each commit of a session from ``sessions``, the recipes it touched and
    the board's default pages (every recipe it touched had its board rows replaced)."""

    @event.listens_for(sessions, "before_commit")
    def _before_commit(session: Session) -> None:
        touched = session.info.pop(repo.TOUCHED, None)
        if touched:
            session.flush()
            prepare(session, touched)
            prepare_board(session)


def prepare_stale(sessions: sessionmaker[Session]) -> int:
    """Prepare every recipe whose JSON has no row of this renderer, and the board's default pages
    from a fresh count of their numbers (a migration, or code older than this, may have changed
    the board without keeping either); returns how many recipes."""
    with sessions() as session:
        slugs = set(session.scalars(select(RecipeRow.slug)).all())
        current = set(
            session.scalars(select(PreparedRow.path).where(PreparedRow.made_by == MADE_BY)).all()
        )
    stale = sorted(s for s in slugs if json_path(s) not in current)
    for start in range(0, len(stale), STALE_BATCH):
        with writing(sessions) as session:
            prepare(session, stale[start : start + STALE_BATCH])
    with writing(sessions) as session:
        recount(session)
        prepare_board(session)
    return len(stale)


class PreparedReader:
    """Reads one prepared answer by its path: one indexed read on a pooled driver connection."""

    def __init__(self, engine: Engine):
        self.engine = engine
        marker = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        self._query = (
            f"SELECT etag, content_type, body, version FROM prepared WHERE path = {marker}"
        )
        self._failure = engine.dialect.loaded_dbapi.Error

    def read(self, path: str) -> Prepared | None:
        """The answer prepared for ``path``, None when there is none; a failed read raises
        SQLAlchemyError, as the application's reads do."""
        connection = self.engine.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute(self._query, (path,))
            row = cursor.fetchone()
            cursor.close()
            connection.rollback()  # PostgreSQL's driver opened a transaction for the read
        except self._failure as exc:
            raise SQLAlchemyError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            connection.close()
        if row is None:
            return None
        return Prepared(etag=row[0], content_type=row[1], body=bytes(row[2]), version=row[3])
