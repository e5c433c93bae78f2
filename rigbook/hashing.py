"""Canonical JSON and content hashes shared by recipes and bench results.

Canonical form: keys sorted at every level, no insignificant whitespace
(separators ``,`` and ``:``), non-ASCII kept as UTF-8, floats as Python's
shortest round-trip repr. The hash is SHA-256 of those bytes, written
``sha256:<64 hex>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any


def canonical_json(value: Any) -> bytes:
    """Serialise a JSON value to its canonical bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def hash_as_written(raw: dict, prepare: Callable[[dict], Any]) -> str:
    """The content hash of a hashed file's JSON as it was written (or posted): everything but
    ``content_hash``, through ``prepare`` (which leaves out the fields its kind added later)."""
    return content_hash(prepare({k: v for k, v in raw.items() if k != "content_hash"}))


def carries_own_hash(raw: object, prepare: Callable[[dict], Any]) -> bool:
    """True when ``raw`` is a JSON object whose ``content_hash`` is :func:`hash_as_written`'s."""
    return (
        isinstance(raw, dict)
        and isinstance(raw.get("content_hash"), str)
        and raw["content_hash"] == hash_as_written(raw, prepare)
    )
