"""Card names: the model a GPU is, and its variant (Max-Q, Workstation, Server, NVL, SXM, PCIe)."""

from __future__ import annotations

import re

from pydantic import BaseModel

_VARIANTS = ("maxq", "workstation", "server", "nvl", "sxm", "pcie")
_NOISE = {"nvidia", "edition", "geforce"}


class CardName(BaseModel):
    """A card name split into its model tokens and its variant tokens."""

    model: tuple[str, ...]
    variant: tuple[str, ...]


def parse_card(name: str) -> CardName:
    """'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition' → model (rtx pro 6000 blackwell), variant (maxq, workstation)."""
    text = name.lower().replace("max-q", "maxq")
    tokens = [
        t
        for t in re.split(r"[\s\-_/]+", text)
        if t and t not in _NOISE and not re.fullmatch(r"\d+gb", t)
    ]
    variant = tuple(sorted({v for t in tokens for v in _VARIANTS if re.fullmatch(v + r"\d*", t)}))
    model = tuple(t for t in tokens if not any(re.fullmatch(v + r"\d*", t) for v in _VARIANTS))
    return CardName(model=model, variant=variant)


def variant_label(card: CardName) -> str:
    """The variant as a user reads it ('Max-Q', 'Workstation' …), or 'unspecified'."""
    labels = {
        "maxq": "Max-Q",
        "workstation": "Workstation",
        "server": "Server",
        "nvl": "NVL",
        "sxm": "SXM",
        "pcie": "PCIe",
    }
    return " ".join(labels[v] for v in card.variant) or "unspecified"


def primary_variant(card: CardName) -> str | None:
    """The variant that sets the power envelope: Max-Q over Workstation ('Max-Q Workstation Edition' is a Max-Q)."""
    for v in _VARIANTS:
        if v in card.variant:
            return v
    return None
