"""`rigbook publish`: send a recipe or a bench result file to a hub, telling which it is by its content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from rigbook.bench.result import BenchResult, load_result
from rigbook.errors import InputError
from rigbook.hub.client import HubClient
from rigbook.recipe.load import dump_recipe, load_recipe_file

RESULT_KIND = "rigbook.bench.result"


class Published(BaseModel):
    """What a publish did."""

    kind: Literal["recipe", "result"]
    slug: str
    revision: int
    points_added: int | None = None
    duplicate: bool = False
    url: str


def file_kind(path: Path) -> Literal["recipe", "result"]:
    """``result`` for a rigbook bench result, ``recipe`` for anything else (validated as a recipe later)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError("E_INPUT", f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(
            "E_INPUT",
            f"{path} is not JSON: {exc}",
            "Publish a recipe .json or a result file from `rigbook bench`.",
        ) from None
    return "result" if isinstance(data, dict) and data.get("kind") == RESULT_KIND else "recipe"


def result_slug(result: BenchResult, given: str | None) -> str:
    """The recipe a result belongs to: ``--recipe``, else the one its conditions name."""
    named = result.conditions.recipe_slug
    if given and named and given != named:
        raise InputError(
            "E_INPUT",
            f"--recipe {given} but the result was measured for {named}",
            "Publish it to the recipe it was measured with.",
        )
    slug = given or named
    if not slug:
        raise InputError(
            "E_INPUT",
            "the result names no recipe (conditions.recipe_slug is empty)",
            "Pass --recipe SLUG with the recipe the result was measured with.",
        )
    return slug


def publish_file(
    path: Path | str, hub: str, token: str | None, *, recipe: str | None = None
) -> Published:
    """Publish ``path`` to ``hub``: a recipe as a new revision, a result as measured points of its recipe."""
    path = Path(path).expanduser()
    client = HubClient(hub, token)
    if file_kind(path) == "result":
        result = load_result(path)
        slug = result_slug(result, recipe)
        accepted = client.publish_result(slug, result.model_dump(mode="json"))
        return Published(
            kind="result",
            slug=slug,
            revision=accepted.revision,
            points_added=accepted.points_added,
            duplicate=accepted.duplicate,
            url=f"{client.base_url}/r/{slug}",
        )
    record = client.publish_recipe(dump_recipe(load_recipe_file(str(path))))
    return Published(
        kind="recipe",
        slug=record["slug"],
        revision=record["revision"]["no"],
        url=f"{client.base_url}/r/{record['slug']}",
    )
