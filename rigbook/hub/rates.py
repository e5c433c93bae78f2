"""Rate limits kept in the database, so every worker and every instance on one database counts together.

Each key (a token's writes, an address's failed authentications, an address's
reads) has one row: the start of its current fixed window and the requests
counted in it. A hit is one upsert in its own short write transaction; the
window restarts when it has passed. A limit of 0 turns that limit off.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field
from sqlalchemy import case, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from rigbook.hub.db import writing
from rigbook.hub.models import RateRow


class Rate(BaseModel):
    """At most ``limit`` requests per ``window_s`` seconds for one key (0: no limit)."""

    limit: int = Field(ge=0)
    window_s: int = Field(default=60, ge=1)

    @property
    def on(self) -> bool:
        return self.limit > 0


class Limits(BaseModel):
    """The hub's rate limits: writes per token, failed authentications and reads per client address."""

    writes_per_token: Rate = Rate(limit=60)
    auth_failures_per_address: Rate = Rate(limit=30)
    reads_per_address: Rate = Rate(limit=0)


def _upsert(dialect: str):
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def hit(factory: sessionmaker[Session], key: str, rate: Rate) -> float | None:
    """Count one request for ``key``; None when it is within ``rate``, else the seconds until the window ends."""
    if not rate.on:
        return None
    now = time.time()
    window = int(now // rate.window_s * rate.window_s)
    with writing(factory) as session:
        insert = _upsert(session.get_bind().dialect.name)
        statement = insert(RateRow).values(key=key, window=window, count=1)
        statement = statement.on_conflict_do_update(
            index_elements=[RateRow.key],
            set_={
                "count": case(
                    (RateRow.window == statement.excluded.window, RateRow.count + 1), else_=1
                ),
                "window": statement.excluded.window,
            },
        ).returning(RateRow.count)
        count: int = session.execute(statement).scalar_one()
    return None if count <= rate.limit else max(window + rate.window_s - now, 0.001)


def blocked(factory: sessionmaker[Session], key: str, rate: Rate) -> float | None:
    """Without counting: the seconds until ``key`` may try again, or None when it may now."""
    if not rate.on:
        return None
    now = time.time()
    window = int(now // rate.window_s * rate.window_s)
    with factory() as session:
        count = session.execute(
            select(RateRow.count).where(RateRow.key == key, RateRow.window == window)
        ).scalar_one_or_none()
    return None if (count or 0) < rate.limit else max(window + rate.window_s - now, 0.001)
