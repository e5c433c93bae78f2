"""Load a recipe from a catalog slug, a file path or a URL; write it back.

Validation problems come back as one :class:`~rigbook.errors.RecipeInvalid`
listing every field path with what was expected and what was found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from rigbook.errors import FetchError, InputError, RecipeInvalid
from rigbook.recipe.schema import Recipe, json_value_problems

#: Problems listed in one error; a hostile record can hold thousands.
MAX_SHOWN = 20


def describe_validation_error(exc: ValidationError) -> list[str]:
    """One line per problem: ``path: expected …; got …``."""
    lines = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"]) or "(record)"
        got = err.get("input")
        shown = json.dumps(got, default=str)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        lines.append(f"{path}: {err['msg']}; got {shown}")
    return lines


def parse_recipe(data: Any, source: str = "recipe") -> Recipe:
    """Validate a decoded JSON value as a recipe."""
    if not isinstance(data, dict):
        raise RecipeInvalid(
            "E_RECIPE_INVALID",
            f"{source}: a recipe is a JSON object, got {type(data).__name__}",
            details=[f"(record): expected an object; got {type(data).__name__}"],
        )
    problems = json_value_problems(data)
    if problems:
        raise RecipeInvalid(
            "E_RECIPE_INVALID",
            f"{source}: {len(problems)} value(s) no recipe may hold",
            details=problems[:MAX_SHOWN],
        )
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        details = describe_validation_error(exc)
        raise RecipeInvalid(
            "E_RECIPE_INVALID",
            f"{source}: {len(details)} problem(s) in the recipe",
            details=details,
        ) from None


def read_json_text(text: str, source: str) -> Any:
    """Decode JSON, turning a syntax error into a coded input error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecipeInvalid(
            "E_RECIPE_INVALID",
            f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            details=[f"(file): line {exc.lineno} column {exc.colno}: {exc.msg}"],
        ) from None
    except RecursionError:
        raise RecipeInvalid(
            "E_RECIPE_INVALID",
            f"{source}: nested too deeply to be a recipe",
            details=["(file): arrays or objects nested thousands deep"],
        ) from None
    except ValueError as exc:
        # Python refuses to read an integer of thousands of digits (a guard against slow parsing).
        raise RecipeInvalid(
            "E_RECIPE_INVALID",
            f"{source}: not a JSON document rigbook reads: {exc}",
            details=[f"(file): {exc}"],
        ) from None


def fetch_text(location: str, *, timeout: float = 20.0) -> str:
    """Read a file path or an http(s) URL as text."""
    if location.startswith(("http://", "https://")):
        try:
            response = httpx.get(location, timeout=timeout, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise FetchError("E_FETCH", f"could not fetch {location}: {exc}") from None
        if response.status_code >= 400:
            raise FetchError("E_FETCH", f"{location} answered HTTP {response.status_code}")
        return response.text
    path = Path(location).expanduser()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("E_RECIPE_NOT_FOUND", f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FetchError("E_FETCH", f"could not read {path}: {exc}") from None


def load_recipe_file(location: str) -> Recipe:
    """Load and validate a recipe from a path or URL."""
    return parse_recipe(read_json_text(fetch_text(location), location), location)


def looks_like_location(ref: str) -> bool:
    """True when ``ref`` names a file or URL rather than a catalog slug."""
    return (
        ref.startswith(("http://", "https://", "/", "./", "../", "~"))
        or ref.endswith(".json")
        or Path(ref).exists()
    )


def _whole_numbers_as_ints(value: Any) -> Any:
    # The schema reads numbers as floats; a record's 207 must be written back as 207, not 207.0
    # (the same JSON number, but not the same text, and not what a reader hashing the record sees).
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers_as_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers_as_ints(v) for v in value]
    return value


def dump_recipe(recipe: Recipe) -> dict[str, Any]:
    """The recipe as a JSON value, with exactly the fields it was given (and any set since);
    whole numbers are written as integers."""
    return _whole_numbers_as_ints(recipe.model_dump(mode="json", by_alias=True, exclude_unset=True))


def dumps_recipe(recipe: Recipe, *, indent: int | None = 2) -> str:
    """The recipe as JSON text."""
    return json.dumps(dump_recipe(recipe), indent=indent, ensure_ascii=False)
