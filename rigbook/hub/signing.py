"""Signed results: a publisher's ed25519 key, what it signs, and how the hub checks it.

`rigbook key create` writes a key pair under ``RIGBOOK_HOME/keys`` (the private key readable by its
owner only). `rigbook publish` signs, for a bench or capacity result, one message: the recipe it is
published to, the result's content hash and the hash of the rig summary it ran on
(:func:`signed_message`), and sends the key's id and the signature in two headers
(:data:`KEY_HEADER`, :data:`SIGNATURE_HEADER`). The hub verifies it with the public key registered to
the token that publishes, so a result changed after signing (its content hash), signed by a key not
registered to that token, or sent to another recipe is refused.

A signature says which key holder published the result; like the journal, it does not prove the
numbers are true.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel

from rigbook.errors import EnvironmentProblem, InputError
from rigbook.hashing import canonical_json, content_hash
from rigbook.home import rigbook_home

KEY_HEADER = "Rigbook-Key-Id"
SIGNATURE_HEADER = "Rigbook-Signature"
MESSAGE_KIND = "rigbook.result-signature"
KEY_FILE = "signing.key"


class PublicKey(BaseModel):
    """A key as others see it: its id and its raw public key, base64."""

    key_id: str
    public_key: str


class LocalKey(PublicKey):
    """The key pair under RIGBOOK_HOME: where the private key is."""

    path: str


def keys_dir() -> Path:
    """``RIGBOOK_HOME/keys``, created readable by its owner only."""
    folder = rigbook_home() / "keys"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def key_id(raw_public: bytes) -> str:
    """``ed25519:`` and the first 32 hex digits of the raw public key's sha256."""
    return "ed25519:" + hashlib.sha256(raw_public).hexdigest()[:32]


def public_key_of(private: Ed25519PrivateKey) -> PublicKey:
    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return PublicKey(key_id=key_id(raw), public_key=base64.b64encode(raw).decode())


def parse_public_key(text: str) -> tuple[Ed25519PublicKey, str]:
    """The key and its id from base64 of the 32 raw bytes; E_INPUT when it is not one."""
    try:
        raw = base64.b64decode(text, validate=True)
        return Ed25519PublicKey.from_public_bytes(raw), key_id(raw)
    except (binascii.Error, ValueError):
        raise InputError(
            "E_INPUT",
            "public_key: not an ed25519 public key (base64 of its 32 raw bytes)",
            "Send the public_key `rigbook key show --json` prints.",
        ) from None


def create_key(*, force: bool = False) -> LocalKey:
    """Write a new key pair to ``RIGBOOK_HOME/keys/signing.key`` (mode 0600); E_CONFIRM when one is
    there and ``force`` is not given."""
    path = keys_dir() / KEY_FILE
    if path.exists() and not force:
        raise InputError(
            "E_CONFIRM",
            f"a signing key already exists at {path}",
            "Keep it, or replace it with `rigbook key create --force` (then register the new "
            "key and revoke the old one on each hub: `rigbook key rotate` does both).",
        )
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fresh = path.with_suffix(".tmp")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    os.chmod(fresh, 0o600)
    os.replace(fresh, path)
    return LocalKey(**public_key_of(private).model_dump(), path=str(path))


def load_key() -> Ed25519PrivateKey | None:
    """The private key under RIGBOOK_HOME, None when there is none."""
    path = keys_dir() / KEY_FILE
    if not path.exists():
        return None
    try:
        private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise EnvironmentProblem(
            "E_FILE",
            f"cannot read the signing key {path}: {exc}",
            "Replace it with `rigbook key create --force`.",
        ) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise EnvironmentProblem(
            "E_FILE",
            f"{path} is not an ed25519 key",
            "Replace it with `rigbook key create --force`.",
        )
    return private


def local_key() -> LocalKey:
    """The key pair under RIGBOOK_HOME; E_INPUT when there is none."""
    private = load_key()
    if private is None:
        raise InputError(
            "E_INPUT",
            f"no signing key at {keys_dir() / KEY_FILE}",
            "Create one with `rigbook key create`.",
        )
    return LocalKey(**public_key_of(private).model_dump(), path=str(keys_dir() / KEY_FILE))


def _rig_of(body: dict[str, Any]) -> Any:
    """The rig summary of a bench result, or of a capacity result's probes."""
    for holder in (body, body.get("bench")):
        if isinstance(holder, dict) and isinstance(holder.get("conditions"), dict):
            return holder["conditions"].get("rig")
    return None


def signed_message(slug: str, body: dict[str, Any]) -> bytes:
    """What a publisher signs: the recipe, the result's content hash and its rig summary's hash."""
    return canonical_json(
        {
            "kind": MESSAGE_KIND,
            "version": 1,
            "recipe": slug,
            "content_hash": body.get("content_hash"),
            "rig": content_hash(_rig_of(body)),
        }
    )


def sign(private: Ed25519PrivateKey, slug: str, body: dict[str, Any]) -> dict[str, str]:
    """The two headers that carry a signature of ``body`` published to ``slug``."""
    signature = private.sign(signed_message(slug, body))
    return {
        KEY_HEADER: public_key_of(private).key_id,
        SIGNATURE_HEADER: base64.b64encode(signature).decode(),
    }


def verifies(public_key: str, signature: str, slug: str, body: dict[str, Any]) -> bool:
    """Whether ``signature`` (base64) is the key's signature of ``body`` published to ``slug``."""
    key, _ = parse_public_key(public_key)
    try:
        key.verify(base64.b64decode(signature, validate=True), signed_message(slug, body))
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True
