"""The hub's tables. Alembic migrations in ``migrations/versions`` create them; keep the two in step.

A recipe's history is its revisions: each holds the full record as served.
``recipes`` keeps one row per slug with the columns the list filters on,
copied from the latest revision.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
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
    __table_args__ = (
        UniqueConstraint("slug", "content_hash", name="uq_results_slug_hash"),
        Index("ix_results_fingerprint", "fingerprint", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(200), ForeignKey("recipes.slug"), index=True)
    content_hash: Mapped[str] = mapped_column(String(80))
    revision_no: Mapped[int] = mapped_column(Integer, doc="The revision its points joined.")
    token_name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text, doc="The bench result, JSON text.")
    fingerprint: Mapped[str | None] = mapped_column(
        String(80),
        nullable=True,
        doc="The run's fingerprint (rigbook.hub.fingerprint); one per run.",
    )
    key_id: Mapped[str | None] = mapped_column(
        String(80), nullable=True, index=True, doc="The key that signed it (rigbook.hub.signing)."
    )
    signature: Mapped[str | None] = mapped_column(Text, nullable=True, doc="base64 ed25519.")


class TokenRow(Base):
    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[str] = mapped_column(String(64))
    revoked_at: Mapped[str | None] = mapped_column(String(64), nullable=True)


class KeyRow(Base):
    """A publisher's public key, registered to one token; a revoked key signs nothing new."""

    __tablename__ = "signing_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key_id: Mapped[str] = mapped_column(String(80), unique=True)
    public_key: Mapped[str] = mapped_column(String(100), doc="base64 of the 32 raw bytes.")
    token_name: Mapped[str] = mapped_column(String(200), index=True)
    created_at: Mapped[str] = mapped_column(String(64))
    revoked_at: Mapped[str | None] = mapped_column(String(64), nullable=True)


class BoardRow(Base):
    """One number on the leaderboard, written in the transaction that writes its recipe's revision.

    ``metric`` and ``scope`` say what the number is and under which fixed terms (e.g. an SLO and a
    profile): a number is ranked only against numbers with the same metric, scope, model, hardware
    and concurrency, and measured numbers only against measured ones.
    """

    __tablename__ = "board"
    # The read path: one partition in rank order, found by index (see leaderboard.board_ids).
    __table_args__ = (
        Index(
            "ix_board_rank",
            "metric",
            "model",
            "card",
            "device_count",
            "scope",
            "concurrency",
            "measured",
            "rank",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(200), ForeignKey("recipes.slug"), index=True)
    revision_no: Mapped[int] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(64))
    scope: Mapped[str] = mapped_column(String(300), default="")
    model: Mapped[str] = mapped_column(String(200))
    card: Mapped[str] = mapped_column(String(200))
    device_count: Mapped[int] = mapped_column(Integer)
    concurrency: Mapped[int] = mapped_column(Integer, default=0, doc="0 when the metric has none.")
    measured: Mapped[bool] = mapped_column(Boolean)
    evidence: Mapped[str] = mapped_column(String(32))
    published_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    value: Mapped[float] = mapped_column(Float)
    rank: Mapped[int] = mapped_column(Integer, default=0)
    entry: Mapped[str] = mapped_column(Text, doc="The entry as served, JSON text.")


class StateRow(Base):
    """Counters shared by every worker and instance: ``board_version`` changes with every board write."""

    __tablename__ = "hub_state"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger)


class RateRow(Base):
    """A fixed-window request counter per key (a token or an address and what it did)."""

    __tablename__ = "rate_counters"

    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    window: Mapped[int] = mapped_column(
        BigInteger, doc="Start of the window, seconds since the epoch."
    )
    count: Mapped[int] = mapped_column(Integer)


class ReproductionRow(Base):
    """A published reproduction of one recipe revision: its verdict as the hub recomputed it, the
    bench result it stands on (a row of ``results``) and the document as posted."""

    __tablename__ = "reproductions"
    __table_args__ = (UniqueConstraint("slug", "content_hash", name="uq_reproductions_slug_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(200), ForeignKey("recipes.slug"), index=True)
    content_hash: Mapped[str] = mapped_column(String(80))
    reproduced_no: Mapped[int] = mapped_column(Integer, doc="The revision whose claims it judged.")
    revision_no: Mapped[int] = mapped_column(Integer, doc="The revision it first shows in.")
    result_hash: Mapped[str] = mapped_column(String(80), doc="The bench result: its evidence.")
    verdict: Mapped[str] = mapped_column(String(32))
    token_name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text, doc="The document as posted, JSON text.")
    key_id: Mapped[str | None] = mapped_column(String(80), nullable=True, index=True)
    signature: Mapped[str | None] = mapped_column(Text, nullable=True, doc="base64 ed25519.")


class PreparedRow(Base):
    """A read's answer as a write left it (:mod:`rigbook.hub.prepared`): its bytes, ETag and type,
    keyed by the path it answers, and the renderer (``made_by``) that made it."""

    __tablename__ = "prepared"

    path: Mapped[str] = mapped_column(String(300), primary_key=True)
    etag: Mapped[str] = mapped_column(String(100))
    content_type: Mapped[str] = mapped_column(String(100))
    body: Mapped[bytes] = mapped_column(LargeBinary)
    version: Mapped[int] = mapped_column(BigInteger)
    made_by: Mapped[str] = mapped_column(String(64))
