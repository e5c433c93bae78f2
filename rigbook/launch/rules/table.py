"""Default deny: each engine kind's table of the options a recipe may set, and the check against it.

The tables (``options_KIND.json`` beside this module) are built by
``scripts/option_tables.py`` from the pinned engine's own option list
(llama-server's ``--help``, vLLM's and SGLang's argparse, llama-cpp-python's
server settings, ``docker run --help``), so they hold every option that engine
has, each classified:

- ``allow``: a recipe may set it, with a value of the given type and bounds;
- ``replaced``: rigbook sets it itself and drops the recipe's (written exactly);
- ``owned``: rigbook's own (host, port, model, served name, GPUs); never from a recipe;
- ``refuse``: it names a path, loads code, a plugin, a config, a template, a library or
  a cache, opens a socket, or changes where output goes; no recipe may set it.

An option that is not in the table (a newer engine's) is refused unless the
user names it with ``--allow-option NAME``. The argv is read the way the engine
reads it: argparse engines take an unambiguous prefix as the whole name and
``--opt=value``; vLLM also reads ``_`` as ``-``.
"""

from __future__ import annotations

import json
import math
import os
import re
from enum import StrEnum
from functools import cache
from pathlib import Path

from pydantic import BaseModel, Field

from rigbook.launch.rules import Danger

TABLES = Path(__file__).parent
#: The prefix of the allow entry ``--allow-option NAME`` adds.
OPTION_ALLOW = "option:"
# A text value: a name, a number list, a key=value; never a path (no `/`), never a space.
SAFE_TEXT = re.compile(r"[A-Za-z0-9_.,:+=@%-]{1,256}")
INT_RE = re.compile(r"[+-]?\d{1,12}")
FLOAT_RE = re.compile(r"[+-]?(\d{1,12}(\.\d{0,12})?|\.\d{1,12})([eE][+-]?\d{1,3})?")
SIZE_RE = re.compile(r"\d{1,12}(\.\d{1,6})?[kKmMgGtT]?[iI]?[bB]?")
BOOL_WORDS = {"true", "false", "1", "0", "on", "off", "yes", "no"}
INT_BOUNDS = (-(2**31), 2**31 - 1)
FLOAT_BOUND = 1e12


class Verdict(StrEnum):
    allow = "allow"
    replaced = "replaced"
    owned = "owned"
    refuse = "refuse"


class ValueKind(StrEnum):
    flag = "flag"
    int = "int"
    float = "float"
    bool = "bool"
    size = "size"
    choice = "choice"
    text = "text"
    path = "path"
    json = "json"


class OptionRule(BaseModel):
    """One option of an engine: every name it is written as, what a recipe may give it."""

    names: list[str] = Field(
        description="Every short and long form and alias, e.g. ['-c', '--ctx-size']."
    )
    verdict: Verdict
    value: ValueKind
    nargs: str | None = Field(default=None, description="'+' or '*': several values follow.")
    min: float | None = None
    max: float | None = None
    choices: list[str] | None = None
    root: str | None = Field(
        default=None, description="For an allowed path: the root it must lie in ('models')."
    )
    why: str = ""
    allow: str | None = Field(
        default=None,
        description="The --allow name that lets a refused option through (None: none).",
    )


class OptionTable(BaseModel):
    """Every option one engine kind has, as its pinned version lists them."""

    kind: str
    source: str = Field(description="Where the option list came from (program and version).")
    abbrev: bool = Field(description="The engine's parser takes an unambiguous prefix (argparse).")
    underscores: bool = Field(default=False, description="`_` in an option name reads as `-`.")
    options: list[OptionRule]

    def index(self) -> dict[str, OptionRule]:
        return {self.norm(n): rule for rule in self.options for n in rule.names}

    def norm(self, name: str) -> str:
        return name.replace("_", "-") if self.underscores else name


@cache
def load_table(kind: str) -> OptionTable | None:
    """The option table of engine ``kind``, or None when rigbook has none for it."""
    path = TABLES / f"options_{kind}.json"
    if not path.is_file():
        return None
    return OptionTable.model_validate_json(path.read_text())


def _number_like(item: str) -> bool:
    return bool(FLOAT_RE.fullmatch(item))


def value_problem(rule: OptionRule, value: str, models_dir: Path | None) -> str | None:
    """Why ``value`` is not one ``rule`` accepts, or None."""
    kind = rule.value
    if kind == ValueKind.int:
        if not INT_RE.fullmatch(value):
            return "is not a whole number"
        low = rule.min if rule.min is not None else INT_BOUNDS[0]
        high = rule.max if rule.max is not None else INT_BOUNDS[1]
        return None if low <= int(value) <= high else f"is outside {low:g}..{high:g}"
    if kind == ValueKind.float:
        if not FLOAT_RE.fullmatch(value) or not math.isfinite(float(value)):
            return "is not a number"
        low = rule.min if rule.min is not None else -FLOAT_BOUND
        high = rule.max if rule.max is not None else FLOAT_BOUND
        return None if low <= float(value) <= high else f"is outside {low:g}..{high:g}"
    if kind == ValueKind.bool:
        return None if value.lower() in BOOL_WORDS else "is not true or false"
    if kind == ValueKind.size:
        return None if SIZE_RE.fullmatch(value) else "is not a size (e.g. 16g)"
    if kind == ValueKind.choice:
        return None if value in (rule.choices or []) else f"is not one of {rule.choices}"
    if kind == ValueKind.text:
        return None if SAFE_TEXT.fullmatch(value) else "is not a plain name (no /, space or quote)"
    if kind == ValueKind.path and rule.root == "models" and models_dir is not None:
        mapped = value.replace("${MODELS_DIR}", str(models_dir))
        if not os.path.isabs(mapped):
            return f"is not a path inside the models folder {models_dir}"
        real, root = os.path.realpath(mapped), os.path.realpath(models_dir)
        inside = real == root or real.startswith(root.rstrip("/") + "/")
        return None if inside else f"resolves to {real}, outside the models folder {models_dir}"
    return "is a value no recipe may give"


def _resolve(table: OptionTable, written: str) -> tuple[list[OptionRule], str]:
    """The rules ``written`` can name (one: found; several: ambiguous); and an attached value."""
    index = table.index()
    norm = table.norm(written)
    if norm in index:
        return [index[norm]], ""
    if not table.abbrev:
        return [], ""
    if norm.startswith("--"):
        hits = {id(r): r for n, r in index.items() if n.startswith("--") and n.startswith(norm)}
        return list(hits.values()), ""
    # argparse reads `-O3` as `-O 3` and takes a prefix of a single-dash name too.
    short = index.get(norm[:2])
    if short is not None and short.value != ValueKind.flag:
        return [short], written[2:]
    hits = {id(r): r for n, r in index.items() if not n.startswith("--") and n.startswith(norm)}
    return list(hits.values()), ""


def _values(rule: OptionRule, args: list[str], start: int) -> list[str]:
    """The items after an option that argparse gives it (several for nargs '+'/'*')."""
    if rule.nargs not in ("+", "*", "?"):
        return args[start : start + 1]
    taken: list[str] = []
    for item in args[start:]:
        if (item.startswith("-") and not _number_like(item)) or (rule.nargs == "?" and taken):
            break
        taken.append(item)
    return taken


def table_dangers(kind: str, args: list[str], *, models_dir: Path | None = None) -> list[Danger]:
    """What in the engine argv ``args`` the table of ``kind`` does not allow.

    A ``replaced`` option is dropped from the argv by the engine adapter when written exactly as
    the table names it; any other spelling (a prefix, ``_`` for ``-``) is refused.
    """
    table = load_table(kind)
    if table is None:
        return []
    found: list[Danger] = []
    i = 0
    while i < len(args):
        item = args[i]
        if item == "--" or not item.startswith("-") or item == "-" or _number_like(item):
            found.append(
                Danger(
                    None,
                    f"argument {item[:80]!r} is not an option: {kind} would read it as a "
                    "positional value (a model, a file), which only rigbook sets",
                )
            )
            i += 1
            continue
        written, has_value, inline = item.partition("=") if "=" in item else (item, "", "")
        rules, attached = _resolve(table, written)
        if attached:
            has_value, inline = "=", attached
        if not rules:
            found.append(
                Danger(
                    OPTION_ALLOW + written,
                    f"{written[:80]} is not an option rigbook knows for {kind} ({table.source}); "
                    "an unknown option can name a file, load code or open a socket",
                )
            )
            nxt = args[i + 1] if i + 1 < len(args) else ""
            i += 1 if has_value or not nxt or nxt.startswith("-") else 2
            continue
        if len(rules) > 1:
            names = sorted(r.names[-1] for r in rules)
            found.append(
                Danger(None, f"{written[:80]} is a prefix of several options: {', '.join(names)}")
            )
            i += 1
            continue
        rule = rules[0]
        name = rule.names[-1]
        if rule.value == ValueKind.flag:
            values: list[str] = [inline] if has_value else []
            used = 0
        elif has_value:
            values, used = [inline], 0
        else:
            values = _values(rule, args, i + 1)
            used = len(values)
        i += 1 + used
        if rule.verdict == Verdict.replaced:
            if written not in rule.names:
                found.append(
                    Danger(
                        None,
                        f"argument {item[:80]!r} sets {name}, which rigbook sets itself; write "
                        f"it as {name} (rigbook then replaces it) or leave it out",
                    )
                )
            continue
        if rule.verdict in (Verdict.owned, Verdict.refuse):
            why = rule.why or "rigbook sets it itself"
            found.append(Danger(rule.allow, f"option {written[:80]} ({name}): {why}"))
            continue
        if rule.value == ValueKind.flag:
            if values:
                found.append(Danger(None, f"option {name} takes no value (given {item[:80]!r})"))
            continue
        if not values and rule.nargs not in ("*", "?"):
            found.append(Danger(None, f"option {name} needs a value"))
            continue
        for value in values:
            problem = value_problem(rule, value, models_dir)
            if problem:
                found.append(Danger(None, f"option {name} value {value[:80]!r} {problem}"))
    return found


def table_names(kind: str) -> set[str]:
    """Every option name the table of ``kind`` classifies."""
    table = load_table(kind)
    return {n for r in table.options for n in r.names} if table else set()


def dump(table: OptionTable) -> str:
    """The table as the JSON file the package holds."""
    return json.dumps(table.model_dump(mode="json", exclude_defaults=True), indent=1) + "\n"
