"""Warnings are coded records (rigbook.findings.Finding), as errors are: never "W_CODE: …" text.

Results written before that hold their warnings as "CODE: message" strings; those still read, as
the record they spell."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from rigbook.codes import CODES, Code, Severity
from rigbook.findings import Finding

RIGBOOK = Path(__file__).resolve().parents[2] / "rigbook"
# A registered code followed by ": ", at the start of a string: a warning written as text.
AS_TEXT = re.compile(r"([EWI]_[A-Z][A-Z0-9_]*): ")


def test_a_warning_written_as_text_reads_as_its_record():
    w = Finding.model_validate("W_CLIENT_BOUND: cell 0 (concurrency 1): client stalled 16.6 ms")
    assert w == Finding.make("W_CLIENT_BOUND", "cell 0 (concurrency 1): client stalled 16.6 ms")
    assert w.severity == Severity.warning and w.remedy == CODES[Code.W_CLIENT_BOUND].remedy
    assert w.line == "W_CLIENT_BOUND: cell 0 (concurrency 1): client stalled 16.6 ms"
    # only the first ": " splits: the message keeps its own colons
    assert Finding.model_validate("W_TRACE_LAG: cell 0: late").message == "cell 0: late"


def test_a_record_reads_back_as_itself():
    w = Finding.make("W_CUT_SHORT", "stopped by a signal")
    assert Finding.model_validate(w.model_dump(mode="json")) == w


@pytest.mark.parametrize("text", ["edited", "W_NO_SUCH_CODE: x", "W_CUT_SHORT stopped", ""])
def test_text_that_names_no_registered_code_is_refused(text):
    with pytest.raises(ValidationError):
        Finding.model_validate(text)


def _text_warnings(source: str, name: str) -> list[str]:
    """Each string in ``source`` (an f-string's text parts included) that starts "CODE: " for a
    registered code."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = AS_TEXT.match(node.value)
            if m and m.group(1) in Code.__members__:
                found.append(f"{name}:{node.lineno}: {node.value!r}")
    return found


def test_rigbook_writes_no_warning_as_text():
    found = [
        line
        for p in sorted(RIGBOOK.rglob("*.py"))
        for line in _text_warnings(p.read_text(encoding="utf-8"), str(p.relative_to(RIGBOOK)))
    ]
    assert not found, "make these Finding.make(CODE, message):\n" + "\n".join(found)


def test_the_check_sees_a_warning_written_as_text():
    code = "W_" + "CUT_SHORT"  # built, so no literal here spells a warning as text
    source = f'x = 1\nplain = "{code}: stopped"\nformatted = f"{code}: cell {{x}} stopped"\n'
    assert len(_text_warnings(source, "bad.py")) == 2
    assert _text_warnings('made = Finding.make("W_CUT_SHORT", "stopped")\n', "good.py") == []
