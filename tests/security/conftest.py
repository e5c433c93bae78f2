"""A sandbox for unsafe recipes: symlinks that point out of it, a models folder, RIGBOOK_HOME
inside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "corpus"


@pytest.fixture
def sandbox(tmp_path, monkeypatch) -> Path:
    """A folder with ``root-link`` → ``/``, ``etc-link`` → ``/etc`` and ``models/cache-link`` →
    ``/etc``."""
    (tmp_path / "root-link").symlink_to("/")
    (tmp_path / "etc-link").symlink_to("/etc")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "cache-link").symlink_to("/etc")
    monkeypatch.setenv("RIGBOOK_HOME", str(tmp_path / "home"))
    return tmp_path


def corpus_recipe(name: str, sandbox: Path) -> tuple[Path, dict]:
    """The corpus recipe ``name`` written into ``sandbox`` with its placeholders filled; and what
    it expects."""
    text = (CORPUS / name).read_text()
    text = text.replace("@SANDBOX@", str(sandbox)).replace("@MODELS@", str(sandbox / "models"))
    path = sandbox / name
    path.write_text(text)
    return path, json.loads(text)["_expect"]


def corpus_names() -> list[str]:
    return sorted(p.name for p in CORPUS.glob("*.json"))


def no_marker_outside(before: set[str]) -> list[str]:
    """Files that appeared in /tmp since ``before`` whose name says a recipe made them."""
    return [n for n in set(os.listdir("/tmp")) - before if "pwned" in n]
