"""docs/capacity.md says only what exists: its commands, options, codes, files and fields are
rigbook's, and its real-run tables are the committed results' own numbers."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import typer

from rigbook.capacity.answer import CapacityAnswer
from rigbook.cli.app import app
from rigbook.codes import Code
from rigbook.recipe.resolve import resolve_recipe
from rigbook.recipe.schema import PerfPoint

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "capacity.md").read_text(encoding="utf-8")
CLI = typer.main.get_command(app)


def _commands(group: Any, prefix: str = "") -> dict[str, Any]:
    """Every command and sub-command by its full name ("hub serve"); groups have ``commands``."""
    found = {}
    for name, cmd in group.commands.items():
        found[prefix + name] = cmd
        if hasattr(cmd, "commands"):
            found.update(_commands(cmd, f"{prefix}{name} "))
    return found


COMMANDS = _commands(CLI)


def _options(cmd: Any) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}


def test_every_command_it_names_exists():
    # In code: `rigbook X` inline, or a line of a code block that starts with it.
    named = set(re.findall(r"(?:`|^)rigbook ([a-z]+)", DOC, flags=re.MULTILINE))
    assert named >= {"capacity", "report", "compare", "publish", "up", "bench"}
    assert named <= set(COMMANDS), named - set(COMMANDS)


def test_every_option_it_names_is_one_of_rigbooks():
    everywhere = set().union(*(_options(c) for c in COMMANDS.values()))
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", DOC))
    # Not rigbook's own: the synthetic server's flag, and the vLLM recipe's engine arguments.
    synthetic = (ROOT / "testkit" / "rigbook_testkit" / "synthetic_server.py").read_text(
        encoding="utf-8"
    )
    vllm = resolve_recipe("smollm2-135m-instruct-on-cpu-vllm").rigbook.launch.args  # type: ignore[union-attr]
    others = {o for o in ("--curve",) if f'"{o}"' in synthetic} | set(vllm)
    assert {"--curve", "--dtype", "--max-num-seqs"} <= others
    assert named <= everywhere | others, named - everywhere - others
    # The usage lines name capacity's own options, every one of them.
    usage = DOC[DOC.index("```\nrigbook capacity URL") : DOC.index("rigbook report capacity.json")]
    assert set(re.findall(r"(--[a-z][a-z-]+)", usage)) == _options(COMMANDS["capacity"]) - {
        "--help"
    }


def test_every_code_it_names_exists():
    named = set(re.findall(r"\b([EW]_[A-Z_]+[A-Z])\b", DOC))
    assert named >= {"E_SLO_INVALID", "W_CUT_SHORT", "W_CAPACITY_LOWER_BOUND"}
    assert named <= {c.value for c in Code}, named - {c.value for c in Code}


def test_every_file_and_module_it_names_exists():
    paths = set(re.findall(r"`((?:rigbook|testkit|tests|docs|benchmarks)/[\w./-]*)`", DOC))
    paths |= set(re.findall(r"\b((?:docs|tests)/[\w/]+\.(?:md|py))\b", DOC))
    assert paths
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert missing == []
    for module in re.findall(r"python -m ([\w.]+)", DOC):
        assert importlib.util.find_spec(module) is not None, module


def test_the_fields_it_names_are_the_results():
    section = DOC[DOC.index("## The perf point") : DOC.index("`rigbook compare` lines")]
    fields = set(re.findall(r"`([a-z_]+)`", section)) - {"perf_points"}
    assert fields <= set(PerfPoint.model_fields), fields - set(PerfPoint.model_fields)
    answer = DOC[DOC.index("## The answer") : DOC.index("## The perf point")]
    named = set(re.findall(r"`([a-z_]+)`", answer)) - {"result_file", "bench", "content_hash"}
    named -= set(COMMANDS)  # `compare` and `publish` read the file
    assert named <= set(CapacityAnswer.model_fields), named - set(CapacityAnswer.model_fields)
