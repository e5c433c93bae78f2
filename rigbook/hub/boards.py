"""Each leaderboard a worker has been asked for, whole, for the write version it was read at: any
page of it (an offset and a limit, the JSON or the HTML board) is a slice of it.

A filter key's board is read once per write version as the ids of its rows in rank order, in one
query (:func:`rigbook.hub.leaderboard.board_ids`); a page is those ids' slice, its rows read by
primary key, with the version checked in the same transaction (a board of an older version is read
again). A deep offset costs a slice, not an ``OFFSET`` the database walks. A new version drops
every board held.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from pydantic import BaseModel
from sqlalchemy.orm import Session, sessionmaker

from rigbook.errors import EnvironmentProblem
from rigbook.hub.leaderboard import BoardFilters, BoardItem, board_ids, board_items, board_version

DEFAULT_BOARDS = 32
# How often a page reads its board again when a write replaced rows in between.
READS = 3


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
        self._held: OrderedDict[str, list[int]] = OrderedDict()
        self._lock = threading.Lock()

    def page(self, version: int, filters: BoardFilters, *, limit: int, offset: int) -> BoardSlice:
        """``limit`` items from ``offset`` of the board ``filters`` select, at ``version`` or newer."""
        key = filters.model_dump_json()
        with self._lock:
            ids = self._held.get(key) if version == self.version else None
            if ids is not None:
                self._held.move_to_end(key)
        with self.sessions() as session:
            if ids is not None and board_version(session) != version:
                ids = None  # written since: the ids held may name rows the write replaced
            for _ in range(READS):
                if ids is None:
                    version = board_version(session)
                    ids = board_ids(session, filters)
                    self._keep(version, key, ids)
                wanted = ids[offset : offset + limit]
                items = board_items(session, wanted)
                if len(items) == len(wanted):
                    break
                # A write replaced rows between reading the ids and the rows (each read is its
                # own snapshot): read the board again rather than answer a short page.
                ids = None
            else:
                raise EnvironmentProblem(
                    "E_DB",
                    "the board changed under every read of it: writes are landing faster than it reads",
                    "Retry in a moment.",
                )
        return BoardSlice(version=version, total=len(ids), items=items)

    def _keep(self, version: int, key: str, ids: list[int]) -> None:
        with self._lock:
            if version != self.version:
                if self.version is not None and version < self.version:
                    return
                self._held.clear()
                self.version = version
            self._held[key] = ids
            while len(self._held) > self.boards:
                self._held.popitem(last=False)
