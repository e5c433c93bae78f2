"""API tokens and the per-token write rate limit.

A token is shown once when made; the hub keeps only its SHA-256, so a copy of
the database does not hand out write access.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import deque

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from rigbook.errors import InputError
from rigbook.hub.models import TokenRow
from rigbook.hub.repository import now_text

TOKEN_PREFIX = "rbk_"


def token_digest(token: str) -> str:
    """The stored form of a token: hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def create_token(factory: sessionmaker[Session], name: str) -> str:
    """Make a token called ``name`` and return it (the only time it is visible)."""
    name = name.strip()
    if not name or len(name) > 200:
        raise InputError("E_INPUT", "a token name is 1 to 200 characters")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with factory() as session, session.begin():
            session.add(TokenRow(name=name, token_sha256=token_digest(token), created_at=now_text()))
    except IntegrityError:
        raise InputError("E_INPUT", f"a token named {name!r} exists already", "Choose another name.") from None
    return token


def token_name(session: Session, token: str) -> str | None:
    """The name of the token ``token``, or None when the hub never made it."""
    return session.execute(select(TokenRow.name).where(TokenRow.token_sha256 == token_digest(token))).scalar_one_or_none()


class RateLimiter:
    """At most ``limit`` writes per ``window_s`` seconds for each key (sliding window, in this process)."""

    def __init__(self, limit: int, window_s: float):
        self.limit = limit
        self.window_s = window_s
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def hit(self, key: str) -> float | None:
        """Count one write; None when allowed, else the seconds until the next one is."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen.setdefault(key, deque())
            while seen and seen[0] <= now - self.window_s:
                seen.popleft()
            if len(seen) >= self.limit:
                return max(seen[0] + self.window_s - now, 0.001)
            seen.append(now)
            return None
