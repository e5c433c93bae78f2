"""The result files committed under tests/fixtures, by the ``kind`` they declare."""

from __future__ import annotations

from pathlib import Path

from rigbook.errors import RigbookError
from rigbook.result_file import read_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def committed(kind: str) -> list[Path]:
    """Every JSON file under tests/fixtures that declares ``kind``, sorted."""
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            if read_file(path).kind == kind:
                found.append(path)
        except RigbookError:  # a fixture that is deliberately no JSON
            continue
    return found
