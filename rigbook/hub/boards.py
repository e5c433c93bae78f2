"""Each leaderboard a worker has been asked for, whole, for the write version it was read at: any
page of it (an offset and a limit, the JSON or the HTML board) is a slice in memory.

A filter key's board is read once per write version by one query in rank order
(:func:`rigbook.hub.leaderboard.board_rows`), with the version from the same snapshot; a deep
offset costs a slice, not an ``OFFSET`` the database walks. A new version drops every board held.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel
from sqlalchemy.orm import Session, sessionmaker

from rigbook.hub.leaderboard import BoardFilters, BoardItem, board_items, board_rows, board_version

DEFAULT_BOARDS = 32


class BoardSlice(BaseModel):
    """One page of a board: the version it was read at, the total matching, and the page's items."""

    version: int
    total: int
    items: list[BoardItem]


class RankedBoards:
    """Whole boards by filter key for one write version; least recently used dropped past ``boards``."""

    def __init__(self, sessions: sessionmaker[Session], boards: int = DEFAULT_BOARDS):
        self.sessions = sessions
        self.boards = boards
        self.version: int | None = None
        self._held: OrderedDict[str, list[Any]] = OrderedDict()
        self._lock = threading.Lock()

    def page(self, version: int, filters: BoardFilters, *, limit: int, offset: int) -> BoardSlice:
        """``limit`` items from ``offset`` of the board ``filters`` select, at ``version`` or newer."""
        key = filters.model_dump_json()
        with self._lock:
            rows = self._held.get(key) if version == self.version else None
            if rows is not None:
                self._held.move_to_end(key)
        if rows is None:
            with self.sessions() as session:  # the version and the board from one snapshot
                version = board_version(session)
                rows = board_rows(session, filters)
            self._keep(version, key, rows)
        return BoardSlice(
            version=version, total=len(rows), items=board_items(rows[offset : offset + limit])
        )

    def _keep(self, version: int, key: str, rows: list[Any]) -> None:
        with self._lock:
            if version != self.version:
                if self.version is not None and version < self.version:
                    return
                self._held.clear()
                self.version = version
            self._held[key] = rows
            while len(self._held) > self.boards:
                self._held.popitem(last=False)
