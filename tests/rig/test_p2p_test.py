"""The functional peer copy test without PyTorch or CuPy: skipped, with the reason."""

from __future__ import annotations

import importlib.util

import pytest

from rigbook.rig.p2p_test import run_p2p_test


def test_skipped_with_reason_without_torch_or_cupy():
    if importlib.util.find_spec("torch") or importlib.util.find_spec("cupy"):
        pytest.skip("PyTorch or CuPy is installed here; this test is for machines without either")
    result = run_p2p_test([(0, 1)])
    assert result.pairs == []
    assert result.skipped == "neither PyTorch nor CuPy is importable"
