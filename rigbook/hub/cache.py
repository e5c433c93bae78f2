"""A small in-process cache of answer bodies, keyed by something that changes whenever the answer would.

Keys carry a version read from the database on every request (the board's
``hub_state`` counter), so a worker never serves a body for a state the
database has moved past, whichever worker or instance made the change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

DEFAULT_ENTRIES = 512


class AnswerCache:
    """Least-recently-used bodies, at most ``entries`` of them; safe across threads."""

    def __init__(self, entries: int = DEFAULT_ENTRIES):
        self.entries = entries
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        """The body stored under ``key``, or None."""
        with self._lock:
            body = self._bodies.get(key)
            if body is not None:
                self._bodies.move_to_end(key)
            return body

    def put(self, key: str, body: bytes) -> None:
        """Store ``body`` under ``key``, dropping the least recently used body past the size."""
        with self._lock:
            self._bodies[key] = body
            self._bodies.move_to_end(key)
            while len(self._bodies) > self.entries:
                self._bodies.popitem(last=False)
