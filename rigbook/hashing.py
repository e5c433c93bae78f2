"""Canonical JSON and content hashes shared by recipes and bench results.

Canonical form: keys sorted at every level, no insignificant whitespace
(separators ``,`` and ``:``), non-ASCII kept as UTF-8, floats as Python's
shortest round-trip repr. The hash is SHA-256 of those bytes, written
``sha256:<64 hex>``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """Serialise a JSON value to its canonical bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
