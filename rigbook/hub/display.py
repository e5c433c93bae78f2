"""Numbers as the pages show them: tok/s to 0.1, joules per token to 0.001.

A bench result's rates carry every digit of a float (196.71078833504683); a
page rounds them for reading, while the JSON API keeps full precision.
"""

from __future__ import annotations

from typing import Any

from rigbook.hub.leaderboard import condition_pairs

NONE = "–"


def tok_s(value: float | None) -> str:
    """A rate in tokens per second, to one decimal (``–`` when unknown)."""
    return NONE if value is None else f"{value:.1f}"


def j_per_token(value: float | None) -> str:
    """An energy per token in joules, to three decimals (``–`` when unknown)."""
    return NONE if value is None else f"{value:.3f}"


def shown_conditions(conditions: dict[str, Any]) -> list[tuple[str, str]]:
    """Conditions as flat ``(name, text)`` pairs for a page, the energy per token rounded."""
    return [
        (name, j_per_token(value) if name == "energy_j_per_token" else str(value))
        for name, value in condition_pairs(conditions)
    ]
