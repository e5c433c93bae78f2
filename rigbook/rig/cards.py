"""Card names: the model a GPU is, its variant (Max-Q, Workstation, Server, NVL, SXM, PCIe) and its memory.

Two kinds of names meet here: what NVML reports ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB",
"NVIDIA RTX 6000 Ada Generation") and what a recipe writes ("H100", "H100 SXM", "V100", "RTX 6000 Ada").
Maker and product-line words, memory size and memory type are not part of the model, so both kinds of
name give the same model tokens.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

_VARIANTS = ("maxq", "workstation", "server", "nvl", "sxm", "pcie")
# Maker, product line and marketing words that NVML adds and recipes leave out.
_NOISE = {"nvidia", "edition", "geforce", "tesla", "quadro", "generation"}
_MEMORY_SIZE = re.compile(r"(\d+)gb")
_MEMORY_TYPE = re.compile(r"(hbm\d*e?|g?ddr\d*x?)")
# A model some names write short: there is one RTX PRO 6000, the Blackwell one.
_ALIASES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("rtx", "pro", "6000"): ("rtx", "pro", "6000", "blackwell")
}
# NVML names the SXM board of these cards without saying SXM: "NVIDIA H100 80GB HBM3" (the PCIe card is
# "NVIDIA H100 PCIe", the NVL one "NVIDIA H100 NVL"), "NVIDIA H800 80GB HBM3", "NVIDIA H200", "NVIDIA B200".
_SXM_WHEN_UNNAMED: dict[tuple[str, ...], str | None] = {
    ("h100",): "hbm3",
    ("h800",): "hbm3",
    ("h200",): None,
    ("h20",): None,
    ("b200",): None,
    ("b300",): None,
}


class CardName(BaseModel):
    """A card name split into its model tokens, its variant tokens and the memory it states."""

    model: tuple[str, ...]
    variant: tuple[str, ...]
    memory_gb: int | None = None
    memory_type: str | None = None


def _is_variant(token: str) -> bool:
    return any(re.fullmatch(v + r"\d*", token) for v in _VARIANTS)


def parse_card(name: str, reported: bool = False) -> CardName:
    """'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition' → model (rtx pro 6000 blackwell), variant (maxq, workstation).

    ``reported=True`` reads the name as NVML reports it: a board NVML names without its variant
    ("NVIDIA H100 80GB HBM3", "NVIDIA H200") is the SXM one. A recipe's "H200" states no variant.
    """
    text = name.lower().replace("max-q", "maxq")
    tokens = [t for t in re.split(r"[\s\-_/,()]+", text) if t and t not in _NOISE]
    size = next((int(m.group(1)) for t in tokens if (m := _MEMORY_SIZE.fullmatch(t))), None)
    kind = next((t for t in tokens if _MEMORY_TYPE.fullmatch(t)), None)
    words = [t for t in tokens if not _MEMORY_SIZE.fullmatch(t) and not _MEMORY_TYPE.fullmatch(t)]
    variant = {v for t in words for v in _VARIANTS if re.fullmatch(v + r"\d*", t)}
    model: tuple[str, ...] = tuple(t for t in words if not _is_variant(t))
    model = _ALIASES.get(model, model)
    if reported and not variant and model in _SXM_WHEN_UNNAMED:
        needs = _SXM_WHEN_UNNAMED[model]
        if needs is None or kind == needs:
            variant = {"sxm"}
    return CardName(model=model, variant=tuple(sorted(variant)), memory_gb=size, memory_type=kind)


def model_label(card: CardName) -> str:
    """The model as a user reads it: 'H100', 'RTX 6000 ADA'."""
    return " ".join(card.model).upper() or "an unnamed card"


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


def card_difference(have: CardName, want: CardName) -> str | None:
    """What sets ``have`` apart from the card ``want`` asks for, or None when it is that card.

    Only what ``want`` states is compared: a recipe's "H100" accepts every H100 variant and memory size.
    """
    if have.model != want.model:
        return f"model {model_label(have)}, not {model_label(want)}"
    parts = []
    wanted_variant = primary_variant(want)
    if wanted_variant and primary_variant(have) != wanted_variant:
        parts.append(f"variant {variant_label(have)}, not {variant_label(want)}")
    if want.memory_gb and have.memory_gb and have.memory_gb != want.memory_gb:
        parts.append(f"memory {have.memory_gb} GB, not {want.memory_gb} GB")
    return "; ".join(parts) or None
