"""Strict answer extraction for multiple-choice replies (rule version 1).

A reply gives an answer only in one of these forms; anything else is "no answer", never a guess:

1. Its first non-empty line is the letter alone, optionally in parentheses and followed by
   ``.``, ``)`` or ``:`` (``B``, ``(B)``, ``B.``), or the letter with that punctuation and then
   the option's text (``B. 85``, ``B) 85``).
2. Otherwise, every ``answer is X`` / ``answer: X`` phrase in the reply (any case, the letter
   optionally in parentheses) names one and the same letter.

The letter must be one of the question's options (A to the last option's letter), written in
upper case. Markdown emphasis (``*``, ``_``) and surrounding spaces are ignored.
"""

from __future__ import annotations

import re

EXTRACTION_RULE = "strict-letter v1"
LETTERS = "ABCDEFGHIJ"

_FIRST_LINE = re.compile(r"\(?([A-J])\)?[.):]?|\(?([A-J])[.):]\s.*")
_PHRASE = re.compile(r"answer(?:\s+is)?\s*[:]?\s*\(?([A-J])\)?(?![A-Za-z])", re.IGNORECASE)


def extract_letter(reply: str, n_options: int) -> str | None:
    """The option letter the reply gives under the rule above, or None."""
    text = reply.replace("*", "").replace("_", "").strip()
    valid = LETTERS[:n_options]
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    found = _FIRST_LINE.fullmatch(first)
    if found:
        letter = found.group(1) or found.group(2)
        return letter if letter in valid else None
    named = {m.group(1) for m in _PHRASE.finditer(text)}
    if len(named) == 1:
        letter = named.pop()
        return letter if letter in valid else None
    return None
