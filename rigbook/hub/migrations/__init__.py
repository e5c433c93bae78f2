"""Alembic migrations of the hub database, run programmatically by :func:`rigbook.hub.migrate.upgrade`."""
