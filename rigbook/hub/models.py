"""The hub's tables. Alembic migrations in ``migrations/versions`` create them; keep the two in step.

A recipe's history is its revisions: each holds the full record as served.
``recipes`` keeps one row per slug with the columns the list filters on,
copied from the latest revision.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class RecipeRow(Base):
    __tablename__ = "recipes"

    slug: Mapped[str] = mapped_column(String(200), primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    latest_no: Mapped[int] = mapped_column(Integer)
    # Filter columns; list-valued ones are stored as "|a|b|" so one LIKE finds a whole value.
    models: Mapped[str] = mapped_column(Text, default="|")
    card_families: Mapped[str] = mapped_column(Text, default="|")
    device_count: Mapped[int] = mapped_column(Integer, default=0)
    engine: Mapped[str | None] = mapped_column(String(200), nullable=True)
    tier: Mapped[str | None] = mapped_column(String(200), nullable=True)
    tags: Mapped[str] = mapped_column(Text, default="|")
    search_text: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[str] = mapped_column(String(64))


class RevisionRow(Base):
    __tablename__ = "revisions"
    __table_args__ = (UniqueConstraint("slug", "no", name="uq_revisions_slug_no"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(200), ForeignKey("recipes.slug"), index=True)
    no: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[str] = mapped_column(String(64))
    notes: Mapped[str | None] = mapped_column(Text, nullable=True)
    record: Mapped[str] = mapped_column(Text, doc="The record as served, JSON text.")


class ResultRow(Base):
    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("slug", "content_hash", name="uq_results_slug_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(200), ForeignKey("recipes.slug"), index=True)
    content_hash: Mapped[str] = mapped_column(String(80))
    revision_no: Mapped[int] = mapped_column(Integer, doc="The revision its points joined.")
    token_name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text, doc="The bench result, JSON text.")


class TokenRow(Base):
    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[str] = mapped_column(String(64))
