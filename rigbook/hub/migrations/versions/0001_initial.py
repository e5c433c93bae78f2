"""The first schema: recipes, revisions, results, tokens.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "recipes",
        sa.Column("slug", sa.String(200), primary_key=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("latest_no", sa.Integer(), nullable=False),
        sa.Column("models", sa.Text(), nullable=False),
        sa.Column("card_families", sa.Text(), nullable=False),
        sa.Column("device_count", sa.Integer(), nullable=False),
        sa.Column("engine", sa.String(200), nullable=True),
        sa.Column("tier", sa.String(200), nullable=True),
        sa.Column("tags", sa.Text(), nullable=False),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.String(64), nullable=False),
    )
    op.create_table(
        "revisions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("slug", sa.String(200), sa.ForeignKey("recipes.slug"), nullable=False),
        sa.Column("no", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(80), nullable=False),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("record", sa.Text(), nullable=False),
        sa.UniqueConstraint("slug", "no", name="uq_revisions_slug_no"),
    )
    op.create_index("ix_revisions_slug", "revisions", ["slug"])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("slug", sa.String(200), sa.ForeignKey("recipes.slug"), nullable=False),
        sa.Column("content_hash", sa.String(80), nullable=False),
        sa.Column("revision_no", sa.Integer(), nullable=False),
        sa.Column("token_name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.UniqueConstraint("slug", "content_hash", name="uq_results_slug_hash"),
    )
    op.create_index("ix_results_slug", "results", ["slug"])
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tokens")
    op.drop_index("ix_results_slug", "results")
    op.drop_table("results")
    op.drop_index("ix_revisions_slug", "revisions")
    op.drop_table("revisions")
    op.drop_table("recipes")
