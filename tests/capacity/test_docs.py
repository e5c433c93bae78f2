"""docs/capacity.md says only what exists: its commands, options, codes, files and fields are
rigbook's, and its real-run tables are the committed results' own numbers."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
import typer

from rigbook.capacity.answer import CapacityAnswer
from rigbook.capacity.result import load_capacity
from rigbook.cli.app import app
from rigbook.codes import Code
from rigbook.recipe.resolve import resolve_recipe
from rigbook.recipe.schema import PerfPoint

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "capacity.md").read_text(encoding="utf-8")
RUNS = ROOT / "tests" / "fixtures" / "capacity"
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
    synthetic = (ROOT / "rigbook" / "bench" / "synthetic_server.py").read_text(encoding="utf-8")
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
    paths = set(re.findall(r"`((?:rigbook|tests|docs|benchmarks)/[\w./-]*)`", DOC))
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


STEP = {"double": "doubling", "bisect": "bisection", "rerun": "re-run"}


def probe_rows(path: Path) -> list[str]:
    """The doc's probe table rows for a result, from the file: tok/s to 0.1, ms to 1 ms."""
    r = load_capacity(path)
    latency = next(t.name for t in r.slo.terms if t.name.startswith("ttft"))
    rows = []
    for o in r.probes:
        v = {x.term: x for x in o.readings}
        rate, ttft = v["per_user_tok_s"], v[latency]
        assert rate.value is not None and ttft.value is not None and o.aggregate_tok_s is not None
        rows.append(
            f"| {o.cell + 1} | {o.concurrency} | {STEP[o.purpose]} "
            f"| {o.verdict}{' (early)' if o.stopped_early else ''} "
            f"| {rate.value:.1f}{'' if rate.passed else ' ✗'} "
            f"| {ttft.value:.0f}{'' if ttft.passed else ' ✗'} "
            f"| {o.aggregate_tok_s:.1f} | {o.requests_ok}/{o.requests_planned} "
            f"| {'yes' if o.client_bound else '—'} |"
        )
    return rows


RESULTS = sorted(RUNS.glob("*/*/capacity.json"))


def _load_1min(path: Path) -> str:
    return re.search(r"load average: ([\d.]+)", path.read_text()).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_the_real_run_tables_are_the_files_numbers(path):
    run = "/".join(path.parts[-3:-1])
    lines = DOC.splitlines()
    for row in probe_rows(path):
        assert row in lines, f"{run}: {row}"
    r = load_capacity(path)
    a = r.answer
    summary = next(line for line in lines if line.startswith(f"| `{run}` |"))
    cells = [c.strip() for c in summary.strip("|").split("|")]
    slo_written = r.slo.text.removesuffix(",error_rate<=0")
    assert cells[2] == f"`{slo_written}`"
    profile = r.bench.conditions.profile
    assert cells[3].startswith(f"`{profile.name}` v{profile.version}")
    before = _load_1min(path.parent / "load-before.txt")
    after = _load_1min(path.parent / "load-after.txt")
    assert cells[4] == f"{before} → {after}"
    users = "no user" if a.users == 0 else f"**{a.users} users**"
    binding = {
        "per_user_tok_s": "per-user rate",
        "ttft_p90_ms": "TTFT p90",
        "ttft_p99_ms": "TTFT p99",
    }
    assert cells[5].startswith(f"{users} (binding: {binding[a.binding or '']}")
    assert (
        cells[6] == f"{a.first_fail_concurrency} user{'s' if a.first_fail_concurrency != 1 else ''}"
    )
    if a.users:
        assert cells[7] == f"{a.aggregate_tok_s:.1f} tok/s"
        rate = next(s for s in a.spread if s.term == "per_user_tok_s")
        ttft = next(s for s in a.spread if s.term == "ttft_p90_ms")
        assert cells[8] == (
            f"per-user {rate.min:.1f} to {rate.max:.1f} tok/s ({rate.spread_pct:.1f}%), "
            f"TTFT p90 {ttft.min:.0f} to {ttft.max:.0f} ms ({ttft.spread_pct:.1f}%)"
        )
    else:
        assert cells[7] == cells[8] == "—"
