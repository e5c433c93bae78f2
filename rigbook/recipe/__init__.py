"""Recipes: schema, loading, canonical hash and the built-in catalog."""

from rigbook.recipe.catalog import EMBEDDED_SLUG, get_recipe, list_recipes, search_recipes
from rigbook.recipe.hash import recipe_hash
from rigbook.recipe.load import dump_recipe, dumps_recipe, load_recipe_file, parse_recipe
from rigbook.recipe.schema import PerfConditions, PerfPoint, Recipe

__all__ = [
    "EMBEDDED_SLUG",
    "PerfConditions",
    "PerfPoint",
    "Recipe",
    "dump_recipe",
    "dumps_recipe",
    "get_recipe",
    "list_recipes",
    "load_recipe_file",
    "parse_recipe",
    "recipe_hash",
    "search_recipes",
]
