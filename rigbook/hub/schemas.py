"""The hub API's bodies, shared by the server (:mod:`rigbook.hub.api`) and the client
(:mod:`rigbook.hub.client`), so the two cannot drift apart.

An error answer is :class:`rigbook.errors.ErrorDocument`, the same document the CLI prints with
``--json``; it is re-exported here with the rest of the API's shapes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rigbook.errors import ErrorBody, ErrorDocument
from rigbook.recipe.schema import Recipe

API_PREFIX = "/api/v1"

__all__ = [
    "API_PREFIX",
    "ErrorBody",
    "ErrorDocument",
    "RecipePage",
    "ReproductionAccepted",
    "ResultAccepted",
    "RevisionInfo",
    "RevisionList",
]


class ResultAccepted(BaseModel):
    """What the hub did with a bench result."""

    slug: str
    revision: int
    points_added: int
    content_hash: str
    duplicate: bool = False
    verified: int = Field(
        default=0, description="Points recomputed from the result's own requests and found equal."
    )


class ReproductionAccepted(BaseModel):
    """What the hub did with a reproduction (:mod:`rigbook.hub.reproductions`)."""

    slug: str
    revision: int = Field(description="The revision the reproduction first shows in.")
    reproduced_revision: int = Field(description="The revision whose claims it judged.")
    verdict: Literal["holds", "does not hold", "inconclusive"]
    content_hash: str
    duplicate: bool = False
    signed_by: str | None = None


class RevisionInfo(BaseModel):
    """One entry of a recipe's history."""

    no: int
    content_hash: str
    created_at: str
    notes: str | None = None


class RevisionList(BaseModel):
    """A recipe's history, oldest first."""

    slug: str
    revisions: list[RevisionInfo]


class RecipePage(BaseModel):
    """One page of recipes, with the total that match the filters."""

    items: list[Recipe]
    total: int
    limit: int
    offset: int
    next: str | None
