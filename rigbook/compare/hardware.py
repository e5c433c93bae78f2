"""The card table (hardware.json): memory bandwidth and power envelope per card, with the vendor page it came from."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

from pydantic import BaseModel

from rigbook.rig.cards import parse_card, primary_variant


class CardSpec(BaseModel):
    """One card of the table."""

    id: str
    name: str
    model: list[str]
    variant: str | None
    memory_gb: float
    bandwidth_gb_s: float
    power_envelope_w: float
    source: str


@cache
def card_table() -> tuple[CardSpec, ...]:
    """Every card in hardware.json."""
    raw = json.loads(
        (resources.files("rigbook.compare") / "hardware.json").read_text(encoding="utf-8")
    )
    return tuple(CardSpec.model_validate(c) for c in raw["cards"])


def candidates(card_name: str) -> list[CardSpec]:
    """The table entries a card name can be: same model tokens, same variant when the name states one,
    same memory size when the name states one ('A100-SXM4-80GB') and it tells entries apart."""
    parsed = parse_card(card_name)
    variant = primary_variant(parsed)
    found = [
        c
        for c in card_table()
        if tuple(c.model) == parsed.model and (variant is None or c.variant == variant)
    ]
    memory = re.search(r"(\d+)\s*gb", card_name.lower())
    if memory and len({c.memory_gb for c in found}) > 1:
        found = [c for c in found if c.memory_gb == float(memory.group(1))] or found
    return found


def bandwidth_gb_s(card_name: str) -> tuple[float | None, str]:
    """Per-card memory bandwidth for a name, and how it was found (or why not).

    An unspecified variant still has a bandwidth when every variant it could be agrees
    (the RTX PRO 6000 Workstation and Max-Q both have 1792 GB/s)."""
    found = candidates(card_name)
    if not found:
        return None, f"card {card_name!r} is not in the bandwidth table"
    values = {c.bandwidth_gb_s for c in found}
    if len(values) > 1:
        return (
            None,
            f"card {card_name!r} matches {', '.join(c.name for c in found)} with different bandwidths",
        )
    names = " / ".join(c.name for c in found)
    return values.pop(), f"{names}: {found[0].bandwidth_gb_s:g} GB/s ({found[0].source})"
