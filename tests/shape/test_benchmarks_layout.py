"""benchmarks/ holds runs, one folder each with a valid run.json that lists every file in it, and
benchmarks/README.md is what scripts/benchmarks_index.py generates from those manifests."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _index() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "benchmarks_index", ROOT / "scripts" / "benchmarks_index.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module


INDEX = _index()


def test_every_run_has_a_valid_manifest_listing_every_file():
    _, faults = INDEX.index(ROOT / "benchmarks")
    assert faults == []
    assert INDEX.run_folders(ROOT / "benchmarks")


def test_the_readme_is_what_the_script_generates():
    readme, _ = INDEX.index(ROOT / "benchmarks")
    assert (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8") == readme


def test_nothing_loose_in_benchmarks():
    # Runs, their scripts, the hub's load tool and the generated index: nothing else.
    assert {p.name for p in (ROOT / "benchmarks").iterdir()} <= {
        "runs",
        "scripts",
        "hub",
        "README.md",
    }


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "2026-12-07-cpu-demo"
    run.mkdir(parents=True)
    (run / "result.json").write_text("{}")
    manifest = {
        "command": "rigbook bench URL",
        "rigbook_commit": "abc1234",
        "machine": "two cores",
        "load_before": None,
        "load_after": None,
        "load_note": "not recorded",
        "files": {"result.json": "the bench result"},
    }
    (run / "run.json").write_text(json.dumps(manifest))
    readme, faults = INDEX.index(tmp_path)
    assert faults == []
    (tmp_path / "README.md").write_text(readme)
    assert INDEX.main(["--check", "--benchmarks", str(tmp_path)]) == 0
    return tmp_path


def test_a_run_without_a_manifest_fails(bench: Path):
    (bench / "runs" / "2026-12-07-cpu-other").mkdir()
    (bench / "runs" / "2026-12-07-cpu-other" / "x.txt").write_text("x")
    _, faults = INDEX.index(bench)
    assert faults == ["2026-12-07-cpu-other: no run.json"]


def test_an_unlisted_file_fails(bench: Path):
    (bench / "runs" / "2026-12-07-cpu-demo" / "sub").mkdir()
    (bench / "runs" / "2026-12-07-cpu-demo" / "sub" / "log.txt").write_text("x")
    _, faults = INDEX.index(bench)
    assert faults == ["2026-12-07-cpu-demo: sub/log.txt is not listed in run.json"]


def test_an_invalid_manifest_fails(bench: Path):
    path = bench / "runs" / "2026-12-07-cpu-demo" / "run.json"
    manifest = json.loads(path.read_text())
    del manifest["load_note"]
    path.write_text(json.dumps(manifest))
    _, faults = INDEX.index(bench)
    assert len(faults) == 1 and "load_note" in faults[0]
    shutil.rmtree(bench / "runs" / "2026-12-07-cpu-demo")
    (bench / "runs" / "demo").mkdir()
    _, faults = INDEX.index(bench)
    assert faults[0] == "demo: folder name is not <date>-<machine>-<what>"


def test_a_stale_readme_fails(bench: Path):
    with (bench / "README.md").open("a") as f:
        f.write("edited by hand\n")
    assert INDEX.main(["--check", "--benchmarks", str(bench)]) == 1
