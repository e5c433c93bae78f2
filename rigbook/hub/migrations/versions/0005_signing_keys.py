"""Signed results: publishers' public keys per token, and each result's key and signature.

Revision ID: 0005
Revises: 0004

Results stored before have no signature (NULL): they are shown unsigned.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signing_keys",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("key_id", sa.String(80), nullable=False, unique=True),
        sa.Column("public_key", sa.String(100), nullable=False),
        sa.Column("token_name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.Column("revoked_at", sa.String(64), nullable=True),
    )
    op.create_index("ix_signing_keys_token_name", "signing_keys", ["token_name"])
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("key_id", sa.String(80), nullable=True))
        batch.add_column(sa.Column("signature", sa.Text(), nullable=True))
    op.create_index("ix_results_key_id", "results", ["key_id"])


def downgrade() -> None:
    op.drop_index("ix_results_key_id", table_name="results")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("signature")
        batch.drop_column("key_id")
    op.drop_index("ix_signing_keys_token_name", table_name="signing_keys")
    op.drop_table("signing_keys")
