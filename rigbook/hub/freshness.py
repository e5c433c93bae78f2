"""How fresh a worker's cached answers are: the hub's write version, read at most every N ms.

Every write that changes what a read answers (a recipe revision, a result's points, a key's
revocation) adds a revision, and every revision bumps ``hub_state.board_version`` in its own
transaction. Each worker keeps the answers it sent (recipe JSON, recipe pages, leaderboard
pages; :mod:`rigbook.hub.answers`) and the boards it read (:mod:`rigbook.hub.boards`) keyed by
that version, and reads the version from the database at most once every
:data:`DEFAULT_INTERVAL_S`: a read in between is served from memory with no database round trip.
So a read on any worker or instance sees a write within that interval; a worker that made the
write reads the version again on its next request, so it sees its own write at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from rigbook.hub.leaderboard import board_version

DEFAULT_INTERVAL_S = 0.1


class VersionGate:
    """The write version as this worker last read it, read again once ``interval_s`` has passed."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.sessions = sessions
        self.interval_s = interval_s
        self.clock = clock
        self._version = 0
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def version(self) -> int:
        """The write version, from memory when read less than ``interval_s`` ago."""
        now = self.clock()
        with self._lock:
            if self._read_at is not None and now - self._read_at < self.interval_s:
                return self._version
        with self.sessions() as session:
            found = board_version(session)
        with self._lock:
            self._version, self._read_at = found, now
        return found

    def fresh(self) -> int | None:
        """The write version when read less than ``interval_s`` ago, else None (no database read)."""
        now = self.clock()
        with self._lock:
            if self._read_at is not None and now - self._read_at < self.interval_s:
                return self._version
        return None

    def last_read(self) -> int:
        """The version as last read, however long ago."""
        with self._lock:
            return self._version

    def expire(self) -> None:
        """Read the version again on the next request (this worker has just written)."""
        with self._lock:
            self._read_at = None
