"""What only tests use stays out of the product: rigbook's wheel holds no synthetic server, NVML
replay or selfbench, and nothing under rigbook/ imports or runs the test kit (testkit/, package
``rigbook_testkit``, a pyproject.toml of its own).

The wheel's file list is what setuptools' package discovery makes of pyproject.toml's
``[tool.setuptools.packages.find]``, read here through the same finder, not by building a wheel
(which compiles the C reader first): the wheel's Python files are those packages' modules.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from setuptools.discovery import PEP420PackageFinder

ROOT = Path(__file__).resolve().parents[2]
KIT = "rigbook_testkit"


def wheel_modules() -> set[str]:
    """Every Python file the wheel would hold, as a path relative to the checkout."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["packages"]["find"]
    packages = PEP420PackageFinder.find(
        where=str(ROOT), include=find.get("include", ("*",)), exclude=find.get("exclude", ())
    )
    return {
        str(module.relative_to(ROOT))
        for package in packages
        for module in (ROOT / package.replace(".", "/")).glob("*.py")
    }


def test_the_wheel_holds_no_synthetic_server_replay_or_selfbench():
    modules = wheel_modules()
    assert "rigbook/bench/measure.py" in modules and "rigbook/rig/nvml.py" in modules
    kit = {str(p.relative_to(ROOT)) for p in (ROOT / "testkit" / KIT).glob("*.py")}
    assert "testkit/rigbook_testkit/synthetic_server.py" in kit
    assert not modules & kit
    names = {Path(m).name for m in modules}
    test_only = {n for n in names if n.startswith("synthetic_")} | (
        names & {"selfbench.py", "replay.py", "nvml_replay.py", "telemetry_replay.py"}
    )
    assert test_only == set()


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants: prose may name the kit, code may not."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def kit_uses(source: str) -> list[str]:
    """Each place in ``source`` that imports the kit or names it in a string (``python -m``,
    ``importlib``): the line and what it said."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        ):
            names = [node.value]
        else:
            continue
        found += [f"line {node.lineno}: {n}" for n in names if KIT in n]
    return found


def test_the_check_sees_an_import_a_late_import_and_a_module_run():
    source = (
        '"""Docstrings may name rigbook_testkit."""\n'
        "import rigbook_testkit.launch\n"
        "def f():\n"
        '    """Nor here: rigbook_testkit."""\n'
        "    from rigbook_testkit.synthetic_curves import Curve\n"
        '    return ["python", "-m", "rigbook_testkit.synthetic_server"]\n'
    )
    assert [use.split(":")[0] for use in kit_uses(source)] == ["line 2", "line 5", "line 6"]


def test_no_module_of_rigbook_imports_or_runs_the_test_kit():
    uses = {
        str(path.relative_to(ROOT)): found
        for path in sorted((ROOT / "rigbook").rglob("*.py"))
        if (found := kit_uses(path.read_text(encoding="utf-8")))
    }
    assert uses == {}
