"""The canonical content hash of a recipe.

What a recipe *is* — its launch, model, hardware, requirements, claims — and
not where or when it was stored. Before hashing, these keys are removed:
``revision``, ``links``, ``created_at``, ``updated_at``, ``speeds`` (derived
from perf points), and ``id`` of each perf point (a database key). The rest is
hashed with :func:`rigbook.hashing.content_hash`.
"""

from __future__ import annotations

from typing import Any

from rigbook.hashing import content_hash
from rigbook.recipe.load import dump_recipe
from rigbook.recipe.schema import Recipe

VOLATILE_KEYS = ("revision", "links", "created_at", "updated_at", "speeds")


def hashable_content(record: dict[str, Any]) -> dict[str, Any]:
    """The part of a recipe record that its content hash covers."""
    content = {k: v for k, v in record.items() if k not in VOLATILE_KEYS}
    if isinstance(content.get("perf_points"), list):
        content["perf_points"] = [
            {k: v for k, v in p.items() if k != "id"} if isinstance(p, dict) else p
            for p in content["perf_points"]
        ]
    return content


def recipe_hash(recipe: Recipe) -> str:
    """``sha256:<hex>`` of the recipe's hashable content."""
    return content_hash(hashable_content(dump_recipe(recipe)))
