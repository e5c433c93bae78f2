"""The Rig document: load, save, summary, bad files."""

from __future__ import annotations

import pytest

from rigbook.errors import InputError, RigbookError
from rigbook.rig.model import load_rig, save_rig
from tests.conftest import FIXTURES

RIGS = FIXTURES / "rigs"


def test_round_trip(tmp_path):
    rig = load_rig(RIGS / "2x-rtx-pro-6000-300w.rig.json")
    again = load_rig(save_rig(rig, tmp_path / "rig.json"))
    assert again == rig


def test_summary_has_each_gpu_power_limit():
    summary = load_rig(RIGS / "4x-rtx-pro-6000-250w-one-busy.rig.json").summary()
    assert summary.hostname == "ws-4x6000"
    assert summary.driver_version == "580.95.05"
    assert [g.power_enforced_limit_w for g in summary.gpus] == [250.0] * 4
    assert summary.gpus[0].name == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"


def test_no_driver_rig_is_valid():
    rig = load_rig(RIGS / "no-driver.rig.json")
    assert rig.gpus == [] and rig.driver is None and "Driver Not Loaded" in rig.reason
    assert rig.summary().gpus == []


def test_not_json_is_input_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(InputError) as exc:
        load_rig(bad)
    assert exc.value.code == "E_INPUT"


def test_wrong_shape_lists_fields(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpus": [{"name": "x"}]}')
    with pytest.raises(InputError) as exc:
        load_rig(bad)
    assert any("taken_at" in d for d in exc.value.details)
    assert any("gpus.0.index" in d for d in exc.value.details)


def test_missing_file_is_fetch_error(tmp_path):
    with pytest.raises(RigbookError) as exc:
        load_rig(tmp_path / "none.json")
    assert exc.value.code == "E_FETCH"
