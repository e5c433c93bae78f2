"""API tokens: made, listed and revoked from the CLI, checked on every write.

A token is shown once when made; the hub keeps only its SHA-256, so a copy of
the database does not hand out write access. Every write looks its token up
in the database, so a revoked token stops working at once in every worker and
instance.
"""

from __future__ import annotations

import hashlib
import secrets

from pydantic import BaseModel
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from rigbook.errors import InputError
from rigbook.hub.db import writing
from rigbook.hub.models import TokenRow
from rigbook.hub.repository import now_text

TOKEN_PREFIX = "rbk_"


class TokenInfo(BaseModel):
    """A token as `rigbook hub token list` shows it: never the token itself."""

    name: str
    created_at: str
    revoked_at: str | None


def token_digest(token: str) -> str:
    """The stored form of a token: hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def create_token(factory: sessionmaker[Session], name: str) -> str:
    """Make a token called ``name`` and return it (the only time it is visible)."""
    name = name.strip()
    if not name or len(name) > 200 or not name.isprintable():
        raise InputError("E_INPUT", "a token name is 1 to 200 printable characters")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with writing(factory) as session:
            session.add(
                TokenRow(name=name, token_sha256=token_digest(token), created_at=now_text())
            )
    except IntegrityError:
        raise InputError(
            "E_INPUT", f"a token named {name!r} exists already", "Choose another name."
        ) from None
    return token


def list_tokens(factory: sessionmaker[Session]) -> list[TokenInfo]:
    """Every token the hub made, oldest first, revoked ones included."""
    with factory() as session:
        rows = session.execute(select(TokenRow).order_by(TokenRow.id)).scalars().all()
    return [TokenInfo(name=r.name, created_at=r.created_at, revoked_at=r.revoked_at) for r in rows]


def revoke_token(factory: sessionmaker[Session], name: str) -> TokenInfo:
    """Revoke the token called ``name``: its next write is refused (E_AUTH). Revoking twice keeps the first time."""
    with writing(factory) as session:
        row = session.execute(select(TokenRow).where(TokenRow.name == name)).scalar_one_or_none()
        if row is None:
            raise InputError("E_INPUT", f"no token named {name!r}", "See `rigbook hub token list`.")
        if row.revoked_at is None:
            session.execute(
                update(TokenRow).where(TokenRow.id == row.id).values(revoked_at=now_text())
            )
            session.refresh(row)
        return TokenInfo(name=row.name, created_at=row.created_at, revoked_at=row.revoked_at)


def token_name(session: Session, token: str) -> str | None:
    """The name of the token ``token``, or None when the hub never made it or it was revoked."""
    return session.execute(
        select(TokenRow.name).where(
            TokenRow.token_sha256 == token_digest(token), TokenRow.revoked_at.is_(None)
        )
    ).scalar_one_or_none()
