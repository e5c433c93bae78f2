"""Alembic revision scripts (Alembic skips this file)."""
