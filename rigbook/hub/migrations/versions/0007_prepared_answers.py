"""Prepared answers: a recipe's JSON and page as the write that changed them rendered them.

Revision ID: 0007
Revises: 0006

The rows are filled when the hub starts (:func:`rigbook.hub.prepared.prepare_stale`), not here: a
page is rendered by the hub's code of the day, which a migration must not depend on.
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "prepared",
        sa.Column("path", sa.String(300), primary_key=True),
        sa.Column("etag", sa.String(100), nullable=False),
        sa.Column("content_type", sa.String(100), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("made_by", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("prepared")
