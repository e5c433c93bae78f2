"""`rigbook publish`: send a recipe, a bench result, a capacity result or a reproduction file to a
hub, telling which it is by its content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel

from rigbook.bench.result import BenchResult, load_result
from rigbook.capacity.result import CAPACITY_KIND, load_capacity
from rigbook.errors import InputError
from rigbook.hub.client import HubClient
from rigbook.hub.signing import load_key, public_key_of, sign
from rigbook.recipe.load import dump_recipe, load_recipe_file

RESULT_KIND = "rigbook.bench.result"
REPRODUCTION_KIND = "rigbook.reproduction"
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


def file_kind(path: Path) -> FileKind:
    """``result`` for a rigbook bench result, ``capacity`` for a capacity result, ``recipe`` for
    anything else (validated as a recipe later)."""
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
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == REPRODUCTION_KIND:
        return "reproduction"
    return "result" if kind == RESULT_KIND else "capacity" if kind == CAPACITY_KIND else "recipe"


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


def signature_for(
    private: Ed25519PrivateKey | None, slug: str, written: bytes
) -> dict[str, str] | None:
    """The signature headers for a result file's bytes published to ``slug``; None without a key."""
    return sign(private, slug, json.loads(written)) if private is not None else None


def publish_file(
    path: Path | str,
    hub: str,
    token: str | None,
    *,
    recipe: str | None = None,
    signing: bool = True,
) -> Published:
    """Publish ``path`` to ``hub``: a recipe as a new revision, a result as measured points of its
    recipe, signed with the key under RIGBOOK_HOME when there is one (``signing=False``: unsigned)."""
    path = Path(path).expanduser()
    client = HubClient(hub, token)
    kind = file_kind(path)
    if kind == "reproduction":  # its folder's result, then its verdict: rigbook.reproduce.publish
        raise InputError(
            "E_INPUT",
            f"{path} is a reproduction, which publish_file does not send",
            "Send it with rigbook.reproduce.publish.publish_reproduction_file "
            "(`rigbook publish` does).",
        )
    private = load_key() if signing and kind != "recipe" else None
    signer = public_key_of(private).key_id if private is not None else None
    if kind == "capacity":
        # Checked here (a malformed or edited file fails before anything is sent), then sent as the
        # bytes written (a result file too): a copy re-serialised by this version would carry
        # fields the file does not (set to their defaults) and no longer match an older file's hash.
        capacity = load_capacity(path)
        slug = result_slug(capacity.bench, recipe)
        written = path.read_bytes()
        accepted = client.publish_capacity(slug, written, signature_for(private, slug, written))
        return Published(
            kind="capacity",
            signed_by=signer,
            slug=slug,
            revision=accepted.revision,
            points_added=accepted.points_added,
            verified=accepted.verified,
            duplicate=accepted.duplicate,
            url=f"{client.base_url}/r/{slug}",
        )
    if kind == "result":
        result = load_result(path)
        slug = result_slug(result, recipe)
        written = path.read_bytes()
        accepted = client.publish_result(slug, written, signature_for(private, slug, written))
        return Published(
            kind="result",
            signed_by=signer,
            slug=slug,
            revision=accepted.revision,
            points_added=accepted.points_added,
            verified=accepted.verified,
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
