"""The verdict table reads on an 80-column terminal: every column, "what differs" included."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from rigbook.reproduce.render import verdict_table
from rigbook.reproduction import Reproduction

# A real reproduction: the committed H200 claims measured on an H100 (the card differs).
FIXTURE = Path(__file__).parents[1] / "fixtures" / "reproduce" / "h100-against-h200-claims.json"


def test_what_differs_shows_in_an_80_column_table():
    rep = Reproduction.model_validate_json(FIXTURE.read_text())
    console = Console(width=80, record=True, color_system=None)
    console.print(verdict_table(rep))
    text = console.export_text()
    assert "differs" in text and text.count("card") == len(rep.rows)
    assert all(len(line) <= 80 for line in text.splitlines())
    for row in rep.rows:
        assert f"{row.claim_tok_s:.1f}" in text
