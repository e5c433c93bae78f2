"""Fixtures the bench tests share."""

from __future__ import annotations

import pytest

from tests.bench.helpers import synthetic_server


@pytest.fixture(scope="module")
def slow_url():
    """The synthetic server at 2 tok/s, one token an event: a reply of N tokens takes N/2 s, so a
    run is still streaming when a test stops or kills it."""
    with synthetic_server("--rate 2 --tokens-per-chunk 1 --falloff 0") as url:
        yield url
