"""What a decode step reads: active parameters per model (models.json) and bytes per parameter per format (quants.json)."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

from pydantic import BaseModel


class ModelFacts(BaseModel):
    """One model of models.json; null fields mean no source states them."""

    id: str
    names: list[str]
    active_params: int | None
    kv_elements_per_token: int | None
    source: str


class QuantFormat(BaseModel):
    """One format of quants.json."""

    names: list[str]
    bytes_per_param: float
    source: str


def _key(text: str) -> str:
    """Names compare case-blind and with '.', '_', '-', '/' and spaces alike."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _table(name: str) -> dict:
    return json.loads((resources.files("rigbook.compare") / name).read_text(encoding="utf-8"))


@cache
def model_table() -> tuple[ModelFacts, ...]:
    """Every model in models.json."""
    return tuple(ModelFacts.model_validate(m) for m in _table("models.json")["models"])


@cache
def quant_table() -> tuple[QuantFormat, ...]:
    """Every format in quants.json."""
    return tuple(QuantFormat.model_validate(q) for q in _table("quants.json")["formats"])


def model_facts(name: str | None) -> ModelFacts | None:
    """The entry for a model slug, name, HF repo or served id; None when the table does not list it."""
    if not name:
        return None
    key = _key(name)
    return next(
        (m for m in model_table() if key in {_key(n) for n in m.names} or key == _key(m.id)), None
    )


def quant_format(name: str | None) -> QuantFormat | None:
    """The format a quantisation or KV cache type names exactly; mixed recipes (e.g. 'nvfp4-csf-mxfp8-attn') match nothing."""
    if not name:
        return None
    key = _key(name)
    return next((q for q in quant_table() if key in {_key(n) for n in q.names}), None)
