"""A fuzzer over the option tables and env names: nothing refused gets through in any spelling.

Argv items are drawn from every engine's table (each option in each of its
forms, abbreviated, with ``=`` or a separate value, ``_`` for ``-``) and values
from what an attacker gives (paths into the fetched weights, ``/proc``, shell
text, listeners on every interface, huge numbers). Each example checks that a
refused or owned option always yields a refusal no ``--allow`` lifts, that
whatever passes has a value of its declared type, and that env variables are
judged by exact name.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigbook.errors import InputError
from rigbook.launch.rules.env import ALLOWED, NEVER_EXACT, SELECTION, env_dangers, never
from rigbook.launch.rules.table import (
    OPTION_ALLOW,
    SAFE_TEXT,
    ValueKind,
    Verdict,
    load_table,
    table_dangers,
)
from rigbook.launch.safety import check_allow_names

KINDS = ("llama_server", "llama_cpp", "vllm", "sglang")
ATTACK_VALUES = [
    "/proc/self/environ",
    "@MODELS@/org/model/evil.py",
    ".ssh/authorized_keys",
    "x.pth",
    "tcp://*:5557",
    "0.0.0.0",
    '{"kv_ip": "0.0.0.0"}',
    "$(touch /tmp/pwned)",
    "a b",
    "9" * 40,
    "-1",
    "1e999",
    "nan",
    "\x1b[2K",
    "",
]
values = st.one_of(st.sampled_from(ATTACK_VALUES), st.text(max_size=8))


def _rules(kind: str):
    table = load_table(kind)
    assert table is not None
    return table.options


def _spell(kind: str, name: str, how: int) -> str:
    """``name`` as an engine also reads it: as is, ``_`` for ``-``, or abbreviated."""
    table = load_table(kind)
    assert table is not None
    if how == 1 and table.underscores and name.startswith("--"):
        return "--" + name[2:].replace("-", "_")
    if how == 2 and table.abbrev and name.startswith("--") and len(name) > 6:
        return name[:-1]
    return name


@st.composite
def items(draw, kind: str):
    rule = draw(st.sampled_from(_rules(kind)))
    name = draw(st.sampled_from(rule.names))
    written = _spell(kind, name, draw(st.integers(0, 2)))
    value = draw(values)
    if rule.value == ValueKind.flag:
        return rule, [written]
    if draw(st.booleans()) and written.startswith("--"):
        return rule, [f"{written}={value}"]
    return rule, [written, value]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_refused_option_is_refused_in_every_spelling(kind, data):
    rule, argv = data.draw(items(kind))
    dangers = table_dangers(kind, argv)
    if rule.verdict in (Verdict.refuse, Verdict.owned) and not rule.allow:
        # Refused by name (or, abbreviated into several options, as ambiguous): never allowed.
        assert any(d.allow is None for d in dangers), argv
        assert all(d.allow is None or d.allow.startswith(OPTION_ALLOW) for d in dangers)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_passes_has_a_value_of_its_declared_type(kind, data):
    rule, argv = data.draw(items(kind))
    if table_dangers(kind, argv):
        return
    assert rule.verdict in (Verdict.allow, Verdict.replaced), argv
    value = argv[-1].split("=", 1)[-1] if len(argv) == 1 else argv[-1]
    if rule.verdict == Verdict.allow and rule.value == ValueKind.text:
        assert SAFE_TEXT.fullmatch(value)
        assert "/" not in value and not re.search(r"\s", value)
    if rule.verdict == Verdict.allow and rule.value == ValueKind.int:
        assert abs(int(value)) < 2**31


@settings(max_examples=300, deadline=None)
@given(
    name=st.one_of(
        st.sampled_from(sorted({*ALLOWED, *NEVER_EXACT, *SELECTION})),
        st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True),
        st.builds(
            lambda a, b: f"{a}_{b}",
            st.sampled_from(["VLLM", "NCCL", "CUDA", "TRITON", "OMP", "SGLANG", "HF", "TORCH"]),
            st.sampled_from(["PATH", "FILE", "DIR", "PLUGIN", "HOST_IP", "CACHE_MANAGER", "X"]),
        ),
    ),
    value=values,
    kind=st.sampled_from(KINDS),
)
def test_env_is_judged_by_exact_name(name, value, kind):
    dangers = env_dangers({name: value}, kind=kind)
    if never(name):
        assert [d.allow for d in dangers] == [None]
        with pytest.raises(InputError):
            check_allow_names([f"env:{name}"])
    elif name in ALLOWED and (not ALLOWED[name].kinds or kind in ALLOWED[name].kinds):
        assert all(d.allow is None for d in dangers)
    else:
        assert [d.allow for d in dangers] == [f"env:{name}"]
