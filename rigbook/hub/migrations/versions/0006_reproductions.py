"""Reproductions: a recipe revision's claims judged on a rig, with the result they stand on.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reproductions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("slug", sa.String(200), sa.ForeignKey("recipes.slug"), nullable=False),
        sa.Column("content_hash", sa.String(80), nullable=False),
        sa.Column("reproduced_no", sa.Integer(), nullable=False),
        sa.Column("revision_no", sa.Integer(), nullable=False),
        sa.Column("result_hash", sa.String(80), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("token_name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("key_id", sa.String(80), nullable=True),
        sa.Column("signature", sa.Text(), nullable=True),
        sa.UniqueConstraint("slug", "content_hash", name="uq_reproductions_slug_hash"),
    )
    op.create_index("ix_reproductions_slug", "reproductions", ["slug"])
    op.create_index("ix_reproductions_key_id", "reproductions", ["key_id"])


def downgrade() -> None:
    op.drop_index("ix_reproductions_key_id", table_name="reproductions")
    op.drop_index("ix_reproductions_slug", table_name="reproductions")
    op.drop_table("reproductions")
