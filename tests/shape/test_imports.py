"""rigbook's modules form a graph without cycles, counting imports inside functions too.

A function-level import is how a cycle hides (``recipe/load.py`` once imported the hub client
inside ``resolve_recipe``, and the hub client imported ``recipe/load.py``), so every ``import``
statement counts, wherever it stands. A package's ``__init__`` re-exporting its own modules is
not an edge back from those modules: Python runs it before them, whatever they import. But
importing ``rigbook.recipe.load`` from outside ``rigbook.recipe`` runs
``rigbook/recipe/__init__.py`` first, so that is an edge to the package too: a cycle through a
package's re-exports fails at run time just as a direct one does.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "rigbook"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _outer_packages(importer: str, target: str, modules: dict[str, Path]) -> set[str]:
    """The packages whose ``__init__`` importing ``target`` runs, leaving out the importer's own."""
    parts = target.split(".")
    found = set()
    for i in range(2, len(parts)):
        package = ".".join(parts[:i])
        if package in modules and not (importer + ".").startswith(package + "."):
            found.add(package)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module → module for every import of a rigbook module anywhere in rigbook/."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    # an extension module compiled from C imports nothing of rigbook's: a leaf
    compiled = {_module_name(p.with_suffix(".py")) for p in ROOT.rglob("*.c")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(name, is_package, node)
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod
                targets = [
                    f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source
                    for a in node.names
                ]
            for target in targets:
                if target in compiled:
                    continue
                while target and target not in modules:  # `import a.b.c` of a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                graph[name].update(_outer_packages(name, target, modules))
    return graph


def test_the_graph_sees_function_level_imports() -> None:
    # cli/bench.py imports rigbook.bench.measure inside its command function only
    graph = import_graph()
    assert "rigbook.bench.measure" in graph["rigbook.cli.bench"]
    assert sum(len(targets) for targets in graph.values()) > 200


def test_no_import_cycle() -> None:
    try:
        tuple(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError("import cycle: " + " → ".join(exc.args[1])) from None


def test_a_cycle_is_found() -> None:
    graph = import_graph()
    graph["rigbook.codes"].add("rigbook.cli.app")  # the CLI reaches codes, so this closes a loop
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError:
        return
    raise AssertionError("an added cycle went unseen")
