"""Strict text: what the hub refuses in any string it stores, and the stricter rule for identifiers.

Every string must be free of control and format characters (NUL, zero-width
spaces, bidi overrides); a line break or tab is allowed only where text is
free. Identifiers and enum words (who claims a number, engine, quantisation,
card, model ids, tags) must be NFKC-normalised printable ASCII, so a look-alike
such as ``measured`` with a Cyrillic ``\u0435``, a full-width letter or a zero-width
space cannot pass for the word it imitates. Free text (titles, notes) may use
any other letter.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

IDENTIFIER_RE = re.compile(r"[\x20-\x7e]*")
FREE_TEXT_KEYS = {
    "title",
    "summary",
    "notes",
    "description",
    "text",
    "install_note",
    "metrics",
    "message",
}
# Keys whose values are identifiers or enum words, wherever they appear in a record or a result.
IDENTIFIER_KEYS = {
    "claimed_by",
    "engine",
    "quant",
    "card",
    "card_family",
    "vendor",
    "model",
    "model_id",
    "slug",
    "tier",
    "tags",
    "kv_cache_dtype",
    "speculative_method",
    "token_count_source",
    "bench_tool",
    "workload",
    "base_engine",
    "type",
    "kind",
    "mode",
    "hf_repo",
    "recipe_slug",
}
ALLOWED_IN_FREE_TEXT = {"\n", "\t", "\r"}


def _char_problem(text: str, free: bool) -> str | None:
    for ch in text:
        if free and ch in ALLOWED_IN_FREE_TEXT:
            continue
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            return f"has the invisible or control character U+{ord(ch):04X}"
    return None


def text_problems(value: Any, where: str = "", *, key: str = "") -> list[str]:
    """One line per string in ``value`` (a JSON value) that breaks the rules above."""
    if isinstance(value, dict):
        return [
            line
            for k, v in value.items()
            for line in text_problems(v, f"{where}.{k}" if where else str(k), key=str(k))
        ]
    if isinstance(value, list):
        return [
            line for i, v in enumerate(value) for line in text_problems(v, f"{where}.{i}", key=key)
        ]
    if not isinstance(value, str):
        return []
    problem = _char_problem(value, key in FREE_TEXT_KEYS)
    if problem is None and key in IDENTIFIER_KEYS and not IDENTIFIER_RE.fullmatch(value):
        nfkc = unicodedata.normalize("NFKC", value) != value
        problem = "must be printable ASCII (an identifier: look-alike letters are refused" + (
            "; it is not NFKC-normalised either)" if nfkc else ")"
        )
    return [f"{where or '(value)'}: {problem}; got {ascii(value)[:80]}"] if problem else []
