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

from rigbook.comparison import Aspect, ComparedPoint, Severity
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


# Context is a class, never an exact token count: a bench writes the median prompt length, which
# moves by a token or so between runs of one profile, and a recipe may write 1 for "a short chat
# prompt".
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


def _field(
    name: str,
    label: str,
    cost: Mapping[Aspect, Severity],
    key: Callable[[str | None], Hashable | None] | None = None,
    **kw,
) -> Rule:
    """A rule on the condition field ``name``, compared by ``key`` of it and then shown as stated.

    Without ``key`` the field is compared as it is, and shown as its value unless ``show`` is given.
    """
    if key is None:
        return Rule(name, label, lambda p, m: getattr(_c(p), name), cost, **kw)
    kw.setdefault("show", lambda p, m: str(getattr(_c(p), name)))
    return Rule(name, label, lambda p, m: key(getattr(_c(p), name)), cost, **kw)


RULES: tuple[Rule, ...] = (
    Rule("model", "model", lambda p, m: _norm(m), WORK, show=lambda p, m: str(m)),
    _field("workload", "workload", WORK, _norm),
    Rule(
        "context_len",
        "context length",
        lambda p, m: p.context_len,
        WORK,
        show=lambda p, m: context_label(p.context_len or 0),
        same=lambda a, b: isinstance(a, int) and isinstance(b, int) and same_context(a, b),
    ),
    _field(
        "gpu_count",
        "GPU count",
        FACTOR,
        with_energy={"power_efficiency": CAVEAT},
        factor=True,
        special=NO_GPU_VS_GPU,
    ),
    _field("card", "card", SETUP, _card_model),
    Rule(
        "card_variant",
        "card variant",
        lambda p, m: _card_variant(_c(p).card),
        SETUP,
        after="card",
        show=lambda p, m: variant_label(parse_card(_c(p).card or "")),
    ),
    _field(
        "power_limit_w_per_gpu",
        "enforced power per card",
        FACTOR,
        with_energy={"power_efficiency": CAVEAT},
        factor=True,
        show=lambda p, m: f"{_c(p).power_limit_w_per_gpu:g} W",
    ),
    _field("engine", "engine", SETUP, _norm),
    _field("engine_version", "engine version", SETUP, _version, after="engine"),
    _field("quant", "quantisation", SETUP, _norm),
    _field("kv_cache_dtype", "KV cache type", SETUP, _norm),
    _field("speculative_method", "speculative method", SETUP, _norm),
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
    _field("reply_tokens", "reply length (tokens)", WORK),
    _field("thinking", "thinking", WORK, show=lambda p, m: "on" if _c(p).thinking else "off"),
    # Rates defined differently measure different things (TTFT in or out, one request or all).
    _field("rate_definition", "rate definition", WORK),
    _field("token_count_source", "token-count source", METHOD),
    _field("bench_tool", "benchmark tool", METHOD, _norm),
    _field("bench_tool_version", "benchmark tool version", METHOD, _version, after="bench_tool"),
    _field("bench_mode", "bench mode", METHOD),
    _field("bench_profile", "bench profile", METHOD, _norm, both_stated=True),
    _field(
        "bench_profile_hash",
        "bench profile content hash",
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
