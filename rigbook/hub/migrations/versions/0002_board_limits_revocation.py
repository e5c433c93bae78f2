"""The leaderboard table, shared state and rate counters, and token revocation.

Revision ID: 0002
Revises: 0001

The board is filled from the latest revision of every recipe already stored.
"""

import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "board",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("slug", sa.String(200), sa.ForeignKey("recipes.slug"), nullable=False),
        sa.Column("revision_no", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(300), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("card", sa.String(200), nullable=False),
        sa.Column("device_count", sa.Integer(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("measured", sa.Boolean(), nullable=False),
        sa.Column("evidence", sa.String(32), nullable=False),
        sa.Column("published_by", sa.String(200), nullable=True),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("entry", sa.Text(), nullable=False),
    )
    op.create_index("ix_board_slug", "board", ["slug"])
    op.create_index(
        "ix_board_rank",
        "board",
        ["metric", "model", "card", "device_count", "scope", "concurrency", "measured", "rank"],
    )
    op.create_table(
        "hub_state",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "rate_counters",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("window", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
    )
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("revoked_at", sa.String(64), nullable=True))
    _fill_board()


def _fill_board() -> None:
    from rigbook.hub.leaderboard import rebuild_board
    from rigbook.recipe.load import parse_recipe

    bind = op.get_bind()
    latest = bind.execute(
        sa.text(
            "SELECT v.slug, v.no, v.record FROM revisions v JOIN recipes r ON r.slug = v.slug AND r.latest_no = v.no"
        )
    )
    recipes = [(parse_recipe(json.loads(row.record), row.slug), row.no) for row in latest]
    with Session(bind=bind) as session:
        rebuild_board(session, recipes)
        session.flush()


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("revoked_at")
    op.drop_table("rate_counters")
    op.drop_table("hub_state")
    op.drop_index("ix_board_rank", "board")
    op.drop_index("ix_board_slug", "board")
    op.drop_table("board")
