"""The built-in catalog: recipe JSON files shipped inside the package."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from rigbook.errors import InputError
from rigbook.recipe.load import parse_recipe, read_json_text
from rigbook.recipe.schema import Recipe

EMBEDDED_SLUG = "smollm2-135m-instruct-q4-1-on-cpu-llama-cpp"


@lru_cache(maxsize=1)
def _catalog() -> dict[str, Recipe]:
    recipes: dict[str, Recipe] = {}
    folder = resources.files("rigbook.recipe") / "catalog"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            recipe = parse_recipe(
                read_json_text(entry.read_text(encoding="utf-8"), entry.name), entry.name
            )
            recipes[recipe.slug] = recipe
    return recipes


def list_recipes() -> list[Recipe]:
    """Every built-in recipe, by slug. Callers get copies they may change."""
    return [r.model_copy(deep=True) for r in _catalog().values()]


def get_recipe(slug: str) -> Recipe:
    """The built-in recipe ``slug``."""
    catalog = _catalog()
    if slug not in catalog:
        close = [s for s in catalog if slug.lower() in s]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise InputError(
            "E_RECIPE_NOT_FOUND",
            f"no recipe {slug!r} in the catalog, and no file by that name.{hint}",
        )
    return catalog[slug].model_copy(deep=True)


def search_recipes(text: str, recipes: list[Recipe] | None = None) -> list[Recipe]:
    """Recipes whose slug, title, summary, tags, models or cards contain every word of ``text``."""
    words = text.lower().split()
    found = []
    for recipe in recipes if recipes is not None else list_recipes():
        hay = " ".join(
            [
                recipe.slug,
                recipe.title,
                recipe.summary or "",
                *recipe.tags,
                *(m.name for m in recipe.models),
                *(h.card for h in recipe.hardware),
                recipe.engine or "",
            ]
        ).lower()
        if all(w in hay for w in words):
            found.append(recipe)
    return found
