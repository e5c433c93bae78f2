"""Shared test fixtures: paths to the committed fixture files and an isolated RIGBOOK_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SEED_RECORD = FIXTURES / "recipes" / "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3.json"


@pytest.fixture(autouse=True)
def rigbook_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own state directory."""
    home = tmp_path_factory.mktemp("rigbook-home")
    monkeypatch.setenv("RIGBOOK_HOME", str(home))
    monkeypatch.delenv("RIGBOOK_DRY_RUN", raising=False)
    return home


@pytest.fixture
def seed_record() -> dict:
    """The public seed record as a JSON value."""
    return json.loads(SEED_RECORD.read_text())
