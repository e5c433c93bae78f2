"""Publishers' signing keys on the hub: registered per token, checked on each signed result, revoked.

A key belongs to the token that registered it; only that token may publish with it or revoke it.
Revoking a key keeps its results: each recipe whose latest revision has points it signed gets a new
revision in which those points carry ``signer_revoked_at`` (pages say "key revoked").
"""

from __future__ import annotations

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from rigbook.errors import InputError
from rigbook.hub import repository as repo
from rigbook.hub.models import KeyRow, ReproductionRow, ResultRow
from rigbook.hub.signing import parse_public_key


class KeyInfo(BaseModel):
    """A registered key, as the API shows it."""

    key_id: str
    public_key: str
    token: str
    created_at: str
    revoked_at: str | None = None


class KeyRegistered(KeyInfo):
    """A registration's outcome: ``existing`` when the token had registered the key before."""

    existing: bool = False


class KeyRevoked(KeyInfo):
    """A revocation's outcome: how many published points now say their key is revoked."""

    points_marked: int = 0


def _info(row: KeyRow) -> KeyInfo:
    return KeyInfo(
        key_id=row.key_id,
        public_key=row.public_key,
        token=row.token_name,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


def register_key(factory: sessionmaker[Session], token: str, public_key: str) -> KeyRegistered:
    """Register ``public_key`` (base64, raw ed25519) to ``token``; E_INPUT when another token has it
    or it was revoked."""
    _, kid = parse_public_key(public_key)

    def write(session: Session) -> KeyRegistered:
        row = session.execute(select(KeyRow).where(KeyRow.key_id == kid)).scalar_one_or_none()
        if row is not None:
            if row.token_name != token or row.revoked_at is not None:
                raise InputError(
                    "E_INPUT",
                    f"key {kid} is "
                    + ("revoked" if row.revoked_at else "registered to another token")
                    + " on this hub",
                    "Create a new key with `rigbook key create --force` and register that one.",
                )
            return KeyRegistered(**_info(row).model_dump(), existing=True)
        row = KeyRow(
            key_id=kid, public_key=public_key, token_name=token, created_at=repo.now_text()
        )
        session.add(row)
        session.flush()
        return KeyRegistered(**_info(row).model_dump())

    return repo.write_transaction(factory, write)


def token_keys(session: Session, token: str) -> list[KeyInfo]:
    """The keys registered to ``token``, oldest first."""
    rows = session.scalars(select(KeyRow).where(KeyRow.token_name == token).order_by(KeyRow.id))
    return [_info(r) for r in rows]


def get_key(session: Session, kid: str) -> KeyInfo | None:
    """A registered key by id (revoked ones too), None when the hub has no such key."""
    row = session.execute(select(KeyRow).where(KeyRow.key_id == kid)).scalar_one_or_none()
    return _info(row) if row is not None else None


def revoke_key(factory: sessionmaker[Session], token: str, kid: str) -> KeyRevoked:
    """Revoke ``kid`` (a key of ``token``) and mark the published points it signed; revoking twice
    changes nothing. A key the token does not have is E_INPUT."""

    def write(session: Session) -> KeyRevoked:
        row = session.execute(
            select(KeyRow).where(KeyRow.key_id == kid).with_for_update()
        ).scalar_one_or_none()
        if row is None or row.token_name != token:
            raise InputError(
                "E_INPUT",
                f"no key {kid} registered to this token",
                "List this token's keys with `rigbook key list`.",
            )
        marked = 0
        if row.revoked_at is None:
            row.revoked_at = repo.now_text()
            slugs = set(
                session.scalars(
                    select(ResultRow.slug).where(ResultRow.key_id == kid).distinct()
                ).all()
            ) | set(
                session.scalars(
                    select(ReproductionRow.slug).where(ReproductionRow.key_id == kid).distinct()
                ).all()
            )
            for slug in sorted(slugs):
                marked += repo.mark_signer_revoked(session, slug, kid, row.revoked_at)
        return KeyRevoked(**_info(row).model_dump(), points_marked=marked)

    return repo.write_transaction(factory, write)
