"""One rule per condition, as data: how to read it from a point, and what a difference costs per aspect.

Three families, by what a difference means:

- WORK: the numbers measure different work (model, prompt kind, context, sampling,
  reply length, thinking). Not comparable for any aspect.
- SETUP: the setups differ (card, engine and version, quantisation, KV cache,
  speculative method). Comparing setups is the point of a raw throughput or
  efficiency comparison, so a caveat there; a scaling figure needs everything
  but the varied factor held, so not comparable for scaling.
- METHOD: the numbers were taken differently (token-count source, bench tool and
  version, bench mode and profile, claimed vs measured). A caveat everywhere.
- FACTOR (GPU count, per-card power): what a scaling figure varies, a caveat for
  raw throughput, and not comparable for power efficiency unless energy was
  measured on both sides (then a caveat: tokens per joule compare across setups).

A condition null on one or both sides is never taken as equal: it is a caveat
("unknown on one side" / "unknown on both sides") for every aspect. A few differences
cost more than their family says (a ``Special``): no GPU against some GPUs is no
scaling step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from rigbook.compare.model import Aspect, ComparedPoint, Severity
from rigbook.rig.cards import parse_card, primary_variant, variant_label

NC: Severity = "not_comparable"
CAVEAT: Severity = "caveat"
WORK: Mapping[Aspect, Severity] = {"throughput": NC, "power_efficiency": NC, "scaling": NC}
SETUP: Mapping[Aspect, Severity] = {"throughput": CAVEAT, "power_efficiency": CAVEAT, "scaling": NC}
METHOD: Mapping[Aspect, Severity] = {
    "throughput": CAVEAT,
    "power_efficiency": CAVEAT,
    "scaling": CAVEAT,
}
FACTOR: Mapping[Aspect, Severity] = {
    "throughput": CAVEAT,
    "power_efficiency": NC,
    "scaling": CAVEAT,
}


def _norm(text: str | None) -> str | None:
    """Case-blind, with '.', '_', '-' and spaces alike; a leading 'v' of a version dropped."""
    if text is None or not str(text).strip():
        return None
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def _version(text: str | None) -> str | None:
    key = _norm(text)
    return key[1:] if key and re.match(r"v\d", key) else key


def _card_model(name: str | None) -> str | None:
    return " ".join(parse_card(name).model) if name else None


def _card_variant(name: str | None) -> str | None:
    return primary_variant(parse_card(name)) if name else None


# Context is a class, never an exact token count: a bench writes the median prompt length (74 one run,
# 75 the next) and a recipe may write 1 for "a short chat prompt".
SHORT_CONTEXT = 512  # tokens; every prompt up to this long is "short"
CONTEXT_TOLERANCE = (
    1.25  # longer prompts match when the longer is at most this many times the shorter
)


def same_context(a: int, b: int) -> bool:
    """Whether two context lengths are of one class: both short, or within the tolerance of each other."""
    if a <= SHORT_CONTEXT and b <= SHORT_CONTEXT:
        return True
    low, high = sorted((a, b))
    return low > 0 and high <= CONTEXT_TOLERANCE * low


def context_label(n: int) -> str:
    """'short (74)' or '~32k (32768)': the class, with the length the point states."""
    if n <= SHORT_CONTEXT:
        return f"short ({n})"
    return f"~{max(1, round(n / 1024))}k ({n})"


def _measured(claimed_by: str | None) -> str | None:
    if not claimed_by:
        return None
    return "measured" if claimed_by == "measured" else "claimed"


@dataclass(frozen=True)
class Special:
    """A difference that costs more than its rule's family: where ``holds(a, b)``, ``cost`` wins per aspect."""

    holds: Callable[[Hashable, Hashable], bool]
    cost: Mapping[Aspect, Severity]
    why: str


# Scaling reads a ratio as what one more (or one fewer) GPU is worth; no GPU against some GPUs
# changes the kind of hardware, not the count, so that ratio is no retention figure.
NO_GPU_VS_GPU = Special(
    holds=lambda a, b: (a == 0) != (b == 0),
    cost={"scaling": NC},
    why="no GPU against GPUs is no scaling step",
)


@dataclass(frozen=True)
class Rule:
    """One condition: its name, how to read it, how to show it, and its cost per aspect when the sides differ."""

    name: str
    label: str
    value: Callable[[ComparedPoint, str | None], Hashable | None]
    on_differ: Mapping[Aspect, Severity]
    show: Callable[[ComparedPoint, str | None], str] | None = None
    with_energy: Mapping[Aspect, Severity] = field(default_factory=dict)
    after: str | None = None  # judged only when this other rule found both sides known and equal
    factor: bool = False  # a factor a scaling figure may vary
    special: Special | None = None
    # Judged only when both sides state it: only bench results carry it, so a recipe's silence is no gap.
    both_stated: bool = False
    # Whether two known values count as equal; plain equality unless set.
    same: Callable[[Hashable, Hashable], bool] | None = None


def _c(p: ComparedPoint):
    return p.conditions


RULES: tuple[Rule, ...] = (
    Rule("model", "model", lambda p, m: _norm(m), WORK, show=lambda p, m: str(m)),
    Rule(
        "workload",
        "workload",
        lambda p, m: _norm(_c(p).workload),
        WORK,
        show=lambda p, m: str(_c(p).workload),
    ),
    Rule(
        "context_len",
        "context length",
        lambda p, m: p.context_len,
        WORK,
        show=lambda p, m: context_label(p.context_len or 0),
        same=lambda a, b: isinstance(a, int) and isinstance(b, int) and same_context(a, b),
    ),
    Rule(
        "gpu_count",
        "GPU count",
        lambda p, m: _c(p).gpu_count,
        FACTOR,
        with_energy={"power_efficiency": CAVEAT},
        factor=True,
        special=NO_GPU_VS_GPU,
    ),
    Rule(
        "card",
        "card",
        lambda p, m: _card_model(_c(p).card),
        SETUP,
        show=lambda p, m: str(_c(p).card),
    ),
    Rule(
        "card_variant",
        "card variant",
        lambda p, m: _card_variant(_c(p).card),
        SETUP,
        after="card",
        show=lambda p, m: variant_label(parse_card(_c(p).card or "")),
    ),
    Rule(
        "power_limit_w_per_gpu",
        "enforced power per card",
        lambda p, m: _c(p).power_limit_w_per_gpu,
        FACTOR,
        with_energy={"power_efficiency": CAVEAT},
        factor=True,
        show=lambda p, m: f"{_c(p).power_limit_w_per_gpu:g} W",
    ),
    Rule(
        "engine",
        "engine",
        lambda p, m: _norm(_c(p).engine),
        SETUP,
        show=lambda p, m: str(_c(p).engine),
    ),
    Rule(
        "engine_version",
        "engine version",
        lambda p, m: _version(_c(p).engine_version),
        SETUP,
        after="engine",
        show=lambda p, m: str(_c(p).engine_version),
    ),
    Rule(
        "quant",
        "quantisation",
        lambda p, m: _norm(_c(p).quant),
        SETUP,
        show=lambda p, m: str(_c(p).quant),
    ),
    Rule(
        "kv_cache_dtype",
        "KV cache type",
        lambda p, m: _norm(_c(p).kv_cache_dtype),
        SETUP,
        show=lambda p, m: str(_c(p).kv_cache_dtype),
    ),
    Rule(
        "speculative_method",
        "speculative method",
        lambda p, m: _norm(_c(p).speculative_method),
        SETUP,
        show=lambda p, m: str(_c(p).speculative_method),
    ),
    Rule(
        "temperature",
        "sampling temperature",
        lambda p, m: _c(p).sampling.temperature if _c(p).sampling else None,
        WORK,
    ),
    Rule(
        "top_p",
        "sampling top_p",
        lambda p, m: _c(p).sampling.top_p if _c(p).sampling else None,
        WORK,
    ),
    Rule("reply_tokens", "reply length (tokens)", lambda p, m: _c(p).reply_tokens, WORK),
    Rule(
        "thinking",
        "thinking",
        lambda p, m: _c(p).thinking,
        WORK,
        show=lambda p, m: "on" if _c(p).thinking else "off",
    ),
    # Rates defined differently measure different things (TTFT in or out, one request or all).
    Rule("rate_definition", "rate definition", lambda p, m: _c(p).rate_definition, WORK),
    Rule("token_count_source", "token-count source", lambda p, m: _c(p).token_count_source, METHOD),
    Rule(
        "bench_tool",
        "benchmark tool",
        lambda p, m: _norm(_c(p).bench_tool),
        METHOD,
        show=lambda p, m: str(_c(p).bench_tool),
    ),
    Rule(
        "bench_tool_version",
        "benchmark tool version",
        lambda p, m: _version(_c(p).bench_tool_version),
        METHOD,
        after="bench_tool",
        show=lambda p, m: str(_c(p).bench_tool_version),
    ),
    Rule("bench_mode", "bench mode", lambda p, m: _c(p).bench_mode, METHOD),
    Rule(
        "bench_profile",
        "bench profile",
        lambda p, m: _norm(_c(p).bench_profile),
        METHOD,
        both_stated=True,
        show=lambda p, m: str(_c(p).bench_profile),
    ),
    Rule(
        "bench_profile_hash",
        "bench profile content hash",
        lambda p, m: _c(p).bench_profile_hash,
        METHOD,
        after="bench_profile",
        show=lambda p, m: str(_c(p).bench_profile_hash).removeprefix("sha256:")[:12],
    ),
    Rule(
        "claimed_by",
        "claimed or measured",
        lambda p, m: _measured(p.claimed_by),
        METHOD,
        show=lambda p, m: f"{_measured(p.claimed_by)} ({p.claimed_by})",
    ),
)

RULES_BY_NAME = {r.name: r for r in RULES}

OutcomeKind = Literal["equal", "differs", "unknown_one_side", "unknown_both"]


class Outcome(BaseModel):
    """What one rule found for one pair of points."""

    rule: str
    kind: OutcomeKind
    a: str | None = None
    b: str | None = None
    special: bool = False  # the difference is the rule's Special case


def _shown(
    rule: Rule, point: ComparedPoint, model: str | None, value: Hashable | None
) -> str | None:
    if value is None:
        return None
    return rule.show(point, model) if rule.show else str(value)


def judge(
    a: ComparedPoint, a_model: str | None, b: ComparedPoint, b_model: str | None
) -> list[Outcome]:
    """Every rule's outcome for points ``a`` and ``b`` (rules whose prerequisite did not hold are left out)."""
    outcomes: dict[str, Outcome] = {}
    for rule in RULES:
        if rule.after and (rule.after not in outcomes or outcomes[rule.after].kind != "equal"):
            # e.g. two engines' versions do not compare (the engine outcome already says why), and a
            # profile hash means nothing where the profile itself was not judged
            continue
        va, vb = rule.value(a, a_model), rule.value(b, b_model)
        if rule.both_stated and (va is None or vb is None):
            continue
        if va is None and vb is None:
            kind: OutcomeKind = "unknown_both"
        elif va is None or vb is None:
            kind = "unknown_one_side"
        else:
            alike = rule.same(va, vb) if rule.same else va == vb
            kind = "equal" if alike else "differs"
        special = kind == "differs" and rule.special is not None and rule.special.holds(va, vb)
        outcomes[rule.name] = Outcome(
            rule=rule.name,
            kind=kind,
            a=_shown(rule, a, a_model, va),
            b=_shown(rule, b, b_model, vb),
            special=special,
        )
    return list(outcomes.values())
