"""Every bench result written by an earlier rigbook (copies in tests/fixtures/results) still loads and verifies its content hash: a field
added to the result model later must not invalidate results written before it (LATER_FIELDS)."""

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from rigbook.bench.progress import warning_markup
from rigbook.bench.result import load_result, save_result
from rigbook.codes import CODES, Code, Severity
from rigbook.findings import Finding

RESULTS = Path(__file__).parent.parent / "fixtures" / "results"


@pytest.mark.parametrize("path", sorted(RESULTS.rglob("result.json")), ids=str)
def test_a_published_result_verifies(path: Path):
    assert load_result(path).content_hash


def test_warnings_written_as_text_read_as_records_and_are_written_back_as_records(tmp_path):
    """Results once held warnings as "CODE: message" strings: each reads as its coded record,
    the file's hash still checks, and the result saved again holds the records."""
    path = RESULTS / "h200-f16-fa" / "result.json"
    written = json.loads(path.read_text(encoding="utf-8"))["warnings"]
    assert written and all(isinstance(w, str) for w in written)
    result = load_result(path)
    assert [w.line for w in result.warnings] == written
    first = result.warnings[0]
    assert first.code == Code.W_CLIENT_BOUND and first.severity == Severity.warning
    assert first.message.startswith("cell 0 (concurrency 1): ")
    assert first.remedy == CODES[Code.W_CLIENT_BOUND].remedy
    again = load_result(save_result(result, tmp_path / "again.json"))
    assert again.warnings == result.warnings
    saved = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))["warnings"][0]
    assert saved == first.model_dump(mode="json")


def test_the_terminal_prints_a_warning_as_code_and_message():
    w = Finding.make("W_PREFIX_CACHE_CHECK", "cell 0 (concurrency 1): counters say [none]")
    printed = io.StringIO()
    Console(file=printed, color_system=None, width=200).print(warning_markup(w), highlight=False)
    assert (
        printed.getvalue()
        == "warning[W_PREFIX_CACHE_CHECK]: cell 0 (concurrency 1): counters say [none]\n"
    )
