"""A small in-process cache of answers, keyed by something that changes whenever the answer would.

Keys carry the hub's write version (:mod:`rigbook.hub.freshness`), read from the
database at most every 100 ms, so a worker serves an answer for a state the
database has moved past for at most that long, whichever worker or instance made
the change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

DEFAULT_ENTRIES = 512
T = TypeVar("T")


class AnswerCache(Generic[T]):
    """Least-recently-used answers, at most ``entries`` of them; safe across threads."""

    def __init__(self, entries: int = DEFAULT_ENTRIES):
        self.entries = entries
        self._bodies: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> T | None:
        """The body stored under ``key``, or None."""
        with self._lock:
            body = self._bodies.get(key)
            if body is not None:
                self._bodies.move_to_end(key)
            return body

    def put(self, key: str, body: T) -> None:
        """Store ``body`` under ``key``, dropping the least recently used body past the size."""
        with self._lock:
            self._bodies[key] = body
            self._bodies.move_to_end(key)
            while len(self._bodies) > self.entries:
                self._bodies.popitem(last=False)
