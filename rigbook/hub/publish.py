"""`rigbook publish`: send a recipe, a bench result or a capacity result to a hub, telling which it
is by its ``kind`` (a file read once and loaded by :mod:`rigbook.results`); `rigbook publish`
sends a reproduction, loaded the same way, with :mod:`rigbook.reproduce.publish`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from rigbook.bench.result import BenchResult
from rigbook.capacity.result import CapacityResult
from rigbook.comparison import Comparison
from rigbook.errors import InputError
from rigbook.hub.client import HubClient
from rigbook.hub.signing import load_key, public_key_of, sign
from rigbook.recipe.load import dump_recipe, parse_recipe
from rigbook.reproduction import Reproduction
from rigbook.result_file import ResultFile, read_file
from rigbook.results import LoadedResult, is_result, validate

FileKind = Literal["recipe", "result", "capacity", "reproduction"]


class Published(BaseModel):
    """What a publish did."""

    kind: FileKind
    slug: str
    revision: int
    points_added: int | None = None
    verified: int | None = None
    duplicate: bool = False
    signed_by: str | None = None
    url: str


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
    path: Path | str,
    hub: str,
    token: str | None,
    *,
    recipe: str | None = None,
    signing: bool = True,
) -> Published:
    """Publish the file at ``path`` (read once): :func:`publish_document`."""
    return publish_document(read_file(path), hub, token, recipe=recipe, signing=signing)


def publish_document(
    file: ResultFile,
    hub: str,
    token: str | None,
    *,
    recipe: str | None = None,
    signing: bool = True,
) -> Published:
    """Publish ``file`` to ``hub``: a recipe as a new revision, a result as measured points of its
    recipe, signed with the key under RIGBOOK_HOME when there is one (``signing=False``: unsigned).
    A result is checked (a malformed or edited file fails before anything is sent), then sent as
    the bytes written: a copy re-serialised by this version would carry fields the file does not
    (set to their defaults) and no longer match an older file's hash."""
    if is_result(file):
        return publish_loaded(validate(file), hub, token, recipe=recipe, signing=signing)
    client = HubClient(hub, token)
    record = client.publish_recipe(dump_recipe(parse_recipe(file.data, str(file.path))))
    return Published(
        kind="recipe",
        slug=record["slug"],
        revision=record["revision"]["no"],
        url=f"{client.base_url}/r/{record['slug']}",
    )


def publish_loaded(
    loaded: LoadedResult,
    hub: str,
    token: str | None,
    *,
    recipe: str | None = None,
    signing: bool = True,
) -> Published:
    """Publish a bench or capacity result (:func:`publish_document`); any other document the one
    loader reads is refused before anything is sent."""
    result, file = loaded.result, loaded.file
    client = HubClient(hub, token)
    if isinstance(result, Reproduction):  # its folder's result, then its verdict
        raise InputError(
            "E_INPUT",
            f"{file.path} is a reproduction, which publish_document does not send",
            "Send it with rigbook.reproduce.publish.publish_reproduction_file "
            "(`rigbook publish` does).",
        )
    if isinstance(result, CapacityResult):
        kind: FileKind = "capacity"
        slug = result_slug(result.bench, recipe)
        send = client.publish_capacity
    elif isinstance(result, BenchResult):
        kind, slug, send = "result", result_slug(result, recipe), client.publish_result
    else:
        what = "a comparison" if isinstance(result, Comparison) else "a needle or agree result"
        raise InputError(
            "E_INPUT",
            f"{file.path} is {what}, which a hub does not take",
            "Publish a recipe, a bench or capacity result, or a reproduction.json.",
        )
    private = load_key() if signing else None
    signature = sign(private, slug, file.data) if private is not None else None
    accepted = send(slug, file.written, signature)
    return Published(
        kind=kind,
        signed_by=public_key_of(private).key_id if private is not None else None,
        slug=slug,
        revision=accepted.revision,
        points_added=accepted.points_added,
        verified=accepted.verified,
        duplicate=accepted.duplicate,
        url=f"{client.base_url}/r/{slug}",
    )
