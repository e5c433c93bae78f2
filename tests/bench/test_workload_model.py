"""Workloads are data: versioned, hashed, named in every result and cell, compared only alike."""

from __future__ import annotations

import json

import pytest

from rigbook.bench.result import load_result, save_result
from rigbook.bench.workloads import default_workload, get_workload, list_workloads, workload_of
from rigbook.bench.workloads.plots import has_turns
from rigbook.compare.build import compare_refs, same_workload
from rigbook.compare.sources import load_source
from rigbook.errors import InputError
from tests.bench.helpers import bench, rigbook, synthetic_server

# (name, version) -> content hash. Changing a shipped workload's values or texts must bump its
# version (a new entry here), never change a pinned hash.
PINNED = {
    ("prose", 1): "sha256:02660eed54d8d332ff6cba6d3f3ee284320ec0630a339c5356a19d0aac47a26e",
    ("multi-turn", 1): "sha256:176acd8e2a5bb52e59986efc2e7e25b6d247361613c2e0b65880f65a8a2594f8",
    ("shared-prefix", 1): "sha256:43cbbadb033eec79973c850944d9f101d35e83951c3cdb72052016f52ca60acc",
    ("unique-prefix", 1): "sha256:eb546c23d53ab89b63a543464d6384ed771dfcea15a1ac40adb81f6c6aaffb0b",
}


def test_every_workload_is_pinned_to_its_hash():
    shipped = {(w.name, w.version): w.content_hash() for w in list_workloads()}
    assert shipped == PINNED


def test_a_changed_value_changes_the_hash():
    w = get_workload("multi-turn")
    assert w.model_copy(update={"turns": 5}).content_hash() != w.content_hash()


def test_workloads_by_name_and_version():
    assert (
        get_workload("multi-turn@1") == get_workload("multi-turn", 1) == get_workload("multi-turn")
    )
    assert default_workload().kind == "prose" and not default_workload().sessions
    assert get_workload("shared-prefix").sessions
    with pytest.raises(InputError) as err:
        get_workload("chatty")
    assert err.value.code == "E_INPUT" and "multi-turn" in (err.value.remedy or "")
    with pytest.raises(InputError):
        get_workload("multi-turn@9")
    with pytest.raises(InputError):
        get_workload("multi-turn@x")


def test_a_result_without_a_workload_ran_prose_v1():
    assert workload_of(None) == default_workload().ref()


@pytest.fixture(scope="module")
def url():
    with synthetic_server("--rate 400 --falloff 0") as url:
        yield url


def test_a_prose_run_names_its_workload_in_the_result_and_each_cell(url, tmp_path):
    result = bench(url, tmp_path / "r.json", profile="quick", concurrency=[1, 2])
    ref = default_workload().ref()
    assert result.conditions.workload == ref
    assert [c.workload for c in result.cells] == [ref.key(), ref.key()]
    # The file carries it, and its hash holds.
    assert load_result(tmp_path / "r.json").conditions.workload == ref
    assert not has_turns(result) and all(
        c.turns == [] and c.prefix_cache is None for c in result.cells
    )


def _as_workload(src, dst, name: str) -> None:
    """A copy of result ``src`` as if it had run workload ``name`` (hash set anew)."""
    result = load_result(src)
    ref = get_workload(name).ref()
    cond = result.conditions.model_copy(update={"workload": ref})
    cells = [c.model_copy(update={"workload": ref.key()}) for c in result.cells]
    save_result(
        result.model_copy(update={"conditions": cond, "cells": cells, "content_hash": None}), dst
    )


def test_compare_refuses_results_of_different_workloads(url, tmp_path):
    # Refused before anything else: a cell the loaded machine made client-bound (no perf point)
    # does not change the answer.
    bench(url, tmp_path / "prose.json", profile="quick", concurrency=[1])
    _as_workload(tmp_path / "prose.json", tmp_path / "chat.json", "multi-turn")
    with pytest.raises(InputError) as err:
        compare_refs([str(tmp_path / "prose.json"), str(tmp_path / "chat.json")])
    assert err.value.code == "E_WORKLOAD_MISMATCH"
    assert any("multi-turn v1" in d for d in err.value.details)
    # The command line: exit 2, the code and its remedy, no traceback.
    done = rigbook("compare", str(tmp_path / "prose.json"), str(tmp_path / "chat.json"), "--json")
    assert done.returncode == 2, done.stderr
    assert "E_WORKLOAD_MISMATCH" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    # Same workload on both sides (an older result without one reads as prose v1): compared.
    raw = json.loads((tmp_path / "prose.json").read_text())
    assert raw["conditions"]["workload"]["name"] == "prose"
    _as_workload(tmp_path / "prose.json", tmp_path / "prose2.json", "prose")
    same = [load_source(str(tmp_path / n), points=False) for n in ("prose.json", "prose2.json")]
    same_workload(same)  # no refusal
    assert same[0].workload == same[1].workload == default_workload().ref().key()


def test_bench_refuses_an_unknown_workload(url, tmp_path):
    done = rigbook("bench", url, "--workload", "chatty", "--out", str(tmp_path / "r.json"))
    assert done.returncode == 2
    assert "E_INPUT" in done.stdout + done.stderr and "Traceback" not in done.stderr
