"""The paths of the reads a write prepares (:mod:`rigbook.hub.prepared`), and their ETags."""

from __future__ import annotations

import hashlib

JSON_TYPE = "application/json"
PAGE_TYPE = "text/html; charset=utf-8"
# The board's default pages (no query string): the JSON's first page and the HTML board's.
BOARD_JSON = "/api/v1/leaderboard.json"
BOARD_HTML = "/leaderboard"


def json_path(slug: str) -> str:
    return f"/api/v1/recipes/{slug}.json"


def page_path(slug: str) -> str:
    return f"/r/{slug}"


def recipe_etag(no: int, digest: str) -> str:
    """The ETag of a recipe's JSON: its revision and content hash."""
    return f'"{no}-{digest.removeprefix("sha256:")[:32]}"'


def page_etag(body: bytes) -> str:
    """The ETag of a page: a digest of its bytes (they change with results and revisions too)."""
    return f'"p-{hashlib.sha256(body).hexdigest()[:32]}"'
