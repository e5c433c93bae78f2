"""Every bench result committed under benchmarks/ still loads and verifies its content hash: a field
added to the result model later must not invalidate results written before it (LATER_FIELDS)."""

from pathlib import Path

import pytest

from rigbook.bench.result import load_result

BENCHMARKS = Path(__file__).parent.parent.parent / "benchmarks"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.rglob("result.json")), ids=str)
def test_a_published_result_verifies(path: Path):
    assert load_result(path).content_hash
