"""Every bench result written by an earlier rigbook (copies in tests/fixtures/results) still loads and verifies its content hash: a field
added to the result model later must not invalidate results written before it (LATER_FIELDS)."""

from pathlib import Path

import pytest

from rigbook.bench.result import load_result

RESULTS = Path(__file__).parent.parent / "fixtures" / "results"


@pytest.mark.parametrize("path", sorted(RESULTS.rglob("result.json")), ids=str)
def test_a_published_result_verifies(path: Path):
    assert load_result(path).content_hash
