"""Checking a signed result on the hub: the key is the publishing token's, not revoked, and the
signature verifies for this result on this recipe (:mod:`rigbook.hub.signing`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigbook.errors import InputError
from rigbook.hub.models import KeyRow
from rigbook.hub.signing import verifies


def check_signature(
    session: Session, token: str, kid: str, signature: str, slug: str, body: dict[str, Any]
) -> None:
    """Raise E_SIGNATURE or E_KEY_REVOKED unless ``signature`` by ``kid``, a key of ``token``,
    verifies for ``body`` published to ``slug``."""
    row = session.execute(select(KeyRow).where(KeyRow.key_id == kid)).scalar_one_or_none()
    if row is None or row.token_name != token:
        raise InputError(
            "E_SIGNATURE",
            f"the result is signed by key {kid!r}, which is not registered to this token",
        )
    if row.revoked_at is not None:
        raise InputError("E_KEY_REVOKED", f"key {kid} was revoked at {row.revoked_at}")
    if not verifies(row.public_key, signature, slug, body):
        raise InputError(
            "E_SIGNATURE",
            f"the signature by key {kid} does not verify for this result on recipe {slug!r}: "
            f"the result changed after it was signed, or it was signed for another recipe",
        )
