"""One error axis: the code decides the class, and every code written in the repo is registered."""

from __future__ import annotations

import ast
import pickle
import re
from pathlib import Path

import pytest

from rigbook.codes import CODES, Code
from rigbook.errors import (
    _CLASSES,
    AuthError,
    EndpointError,
    ErrorDocument,
    InputError,
    LaunchError,
    RecipeInvalid,
    RigbookError,
    error_class,
)

REPO = Path(__file__).resolve().parents[2]
CODE_TEXT = re.compile(r"[EWI]_[A-Z][A-Z0-9_]*")


def _sources() -> list[Path]:
    return sorted([*(REPO / "rigbook").rglob("*.py"), *(REPO / "tests").rglob("*.py")])


def _code_of(node: ast.expr) -> str | None:
    """The code a call's first argument spells: a literal "E_…" or ``Code.E_…``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return _code_attribute(node)


def _code_attribute(node: ast.AST) -> str | None:
    """``E_…`` of ``Code.E_…``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "Code" else None
    return None


def test_every_code_written_in_the_repo_is_registered() -> None:
    unknown = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            literal = isinstance(node, ast.Constant) and isinstance(node.value, str)
            spelt = node.value if literal else _code_attribute(node)
            if spelt and CODE_TEXT.fullmatch(spelt) and spelt not in Code.__members__:
                unknown.append(f"{path.relative_to(REPO)}:{node.lineno}: {spelt}")
    assert not unknown, "codes not in rigbook/codes.py:\n" + "\n".join(unknown)


def test_every_error_made_in_the_repo_is_of_its_codes_class() -> None:
    wrong, seen = [], 0
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
                continue
            cls, code = _CLASSES.get(node.func.id), _code_of(node.args[0])
            if cls is None or code is None or code not in Code.__members__:
                continue
            seen += 1
            if CODES[Code(code)].raises is None or not issubclass(error_class(code), cls):
                wrong.append(f"{path.relative_to(REPO)}:{node.lineno}: {cls.__name__}({code!r})")
    assert seen > 100, "the walk found too few raise sites to be looking in the right place"
    assert not wrong, "errors whose class is not their code's:\n" + "\n".join(wrong)


def test_the_code_decides_the_class() -> None:
    assert type(RigbookError("E_AUTH", "token unknown")) is AuthError
    assert type(RigbookError(Code.E_CONNECT, "refused")) is EndpointError
    # a subclass of the class named is fine: an InputError handler still catches it
    assert type(InputError("E_RECIPE_INVALID", "bad")) is RecipeInvalid
    # made through a variable, so the walk above does not count these deliberate mistakes
    launch_error, base = LaunchError, RigbookError
    with pytest.raises(TypeError, match="raised as InputError"):
        launch_error("E_INPUT", "a launch by that name runs")
    with pytest.raises(TypeError, match="finding"):
        base("W_POWER", "a warning is not raised")


def test_an_unknown_code_string_fails_at_once() -> None:
    typo = "E_" + "INPTU"  # built, so the literal check above does not flag this file
    with pytest.raises(ValueError, match="unregistered code"):
        InputError(typo, "x")


def test_every_error_code_names_an_existing_class_and_findings_name_none() -> None:
    for info in CODES.values():
        assert (info.raises is None) == (info.severity.value != "error"), info.code
        if info.raises:
            assert error_class(info.code).__name__ == info.raises


def test_the_error_document_is_what_to_dict_gives_and_survives_a_round_trip() -> None:
    error = RigbookError("E_RESULT_INVALID", "bad hash", details=["sha256 differs"])
    doc = ErrorDocument(error=error.body()).model_dump(mode="json")
    assert doc == {"error": error.to_dict()}
    assert doc["error"] == {
        "code": "E_RESULT_INVALID",
        "message": "bad hash",
        "remedy": CODES[Code.E_RESULT_INVALID].remedy,
        "details": ["sha256 differs"],
    }
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is InputError and copy.to_dict() == error.to_dict()
