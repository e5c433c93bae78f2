"""A recipe by any name a user gives: a file path, a URL, a catalog slug or a slug on a hub.

This sits above the catalog and the hub client (both of which read recipes with
:mod:`rigbook.recipe.load`), so nothing below it imports it back. It is not re-exported
from :mod:`rigbook.recipe`: the hub client imports that package, and the package importing
the hub client would close a loop.
"""

from __future__ import annotations

from rigbook.hub.client import HubClient
from rigbook.recipe.catalog import get_recipe
from rigbook.recipe.load import load_recipe_file, looks_like_location
from rigbook.recipe.schema import Recipe


def resolve_recipe(ref: str, *, hub: str | None = None) -> Recipe:
    """A recipe from a catalog slug, a file path or a URL (or a slug on ``hub``)."""
    if looks_like_location(ref):
        return load_recipe_file(ref)
    if hub:
        return HubClient(hub).get_recipe(ref)
    return get_recipe(ref)
