"""Alembic environment: runs on the connection :func:`rigbook.hub.migrate.upgrade` hands over."""

from __future__ import annotations

from alembic import context

from rigbook.hub.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
