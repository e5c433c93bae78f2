"""What the hub admits: recipes without measured points, and results that check out and fit their recipe.

``measured`` is the hub's word for a number from a bench result whose hash it
checked (``POST /api/v1/recipes/{slug}/results``), so a recipe write may not
carry one. A number without its GPU count, card, enforced power limit per card
(for GPU results), engine, quantisation, sampling, reply length, concurrency
and token-count source is not published (docs/hub.md, under
``POST /api/v1/recipes/{slug}/results``); nor is one measured on other hardware than the
recipe's, or with another model than the one the recipe's server answers to.
"""

from __future__ import annotations

import math
import re
from typing import Any, cast

from rigbook.bench.result import BenchResult, hash_matches, verify_hash
from rigbook.compare.derived import roofline
from rigbook.compare.weights import model_facts
from rigbook.comparison import ComparedPoint
from rigbook.hub.bounds import (
    condition_problems,
    energy_problems,
    point_bound_problems,
    power_problems,
    time_problems,
)
from rigbook.hub.text import text_problems
from rigbook.recipe.schema import PerfConditions, PerfPoint, Recipe
from rigbook.rig.cards import parse_card

MEASURED = "measured"
# Words a claim may not be called, compared without case, spaces or punctuation.
RESERVED_CLAIMS = {
    "measured",
    "verified",
    "verifiedfromjournal",
    "consistentwithjournal",
    "measuredunverified",
    "unverified",
}
HUB_POINT_KEYS = ("evidence", "published_by", "signed_by", "signer_revoked_at")
# A rate may reach the memory-bandwidth ceiling `rigbook compare` derives times this: the vendor's bandwidth is
# rounded, and a small model's weights partly stay in cache. Anything above is refused as impossible.
CEILING_MARGIN = 1.10
RATE_FIELDS = ("decode_tok_s", "prefill_tok_s", "ttft_ms", "per_request_decode_tok_s_median")


def _skeleton(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def recipe_problems(recipe: Recipe, given: dict[str, Any]) -> list[str]:
    """Reasons to refuse a recipe write, one line each: strings with look-alike or invisible characters, and
    perf points that call themselves measured or carry what only the hub sets (evidence, publisher)."""
    problems = text_problems(given)
    for i, point in enumerate(recipe.perf_points):
        if point.claimed_by is not None and _skeleton(point.claimed_by) in RESERVED_CLAIMS:
            problems.append(
                f"perf_points.{i}.claimed_by: {MEASURED!r} is set by the hub for points of a published "
                f"bench result (POST /api/v1/recipes/{{slug}}/results); remove the point or say who "
                f"claims it (e.g. 'submitter'); got {point.claimed_by!r}"
            )
        problems += [
            f"perf_points.{i}.{key}: set by the hub for measured points; remove it"
            for key in HUB_POINT_KEYS
            if key in (point.model_extra or {})
        ]
    return problems


def _card_words(name: str) -> set[str]:
    # The card's model words without maker, memory size or variant: a Max-Q and a Workstation card are one family.
    return set(parse_card(name).model)


def card_fits(recipe: Recipe, card: str) -> bool:
    """Whether ``card`` is of the recipe's card family (True when the recipe names none)."""
    families = [_card_words(v) for h in recipe.hardware for v in (h.card, h.card_family) if v]
    if not families:
        return True
    have = _card_words(card) if card else set()
    return any(family and family <= have for family in families)


def fit_problems(recipe: Recipe, conditions: PerfConditions, where: str) -> list[str]:
    """Why a point measured under ``conditions`` does not belong to ``recipe``'s hardware (GPU count, card family)."""
    problems = []
    if conditions.gpu_count is not None and conditions.gpu_count != recipe.gpu_count:
        problems.append(
            f"{where}.gpu_count: the recipe runs on {recipe.gpu_count} GPU(s); got {conditions.gpu_count}"
        )
    if conditions.gpu_count and conditions.card and not card_fits(recipe, conditions.card):
        cards = " or ".join(h.card for h in recipe.hardware)
        problems.append(
            f"{where}.card: not the recipe's card family ({cards}); got {conditions.card!r}"
        )
    return problems


def model_problem(recipe: Recipe, model: str) -> str | None:
    """Why ``model`` (the id a result sent) is not the recipe's served model; None when it is.

    The id must be exactly the one the recipe's server answers to (``rigbook.serve.model_id``); a recipe that
    names none takes its model's slug, name or Hugging Face repo, or another name of the same model in
    `rigbook compare`'s model table.
    """
    served = recipe.ext.serve.model_id if recipe.ext.serve else None
    if served:
        if model == served:
            return None
        return f"conditions.model: the recipe's server answers to {served!r}; the result measured {model!r}"
    ref = recipe.models[0] if recipe.models else None
    names = {n for n in (ref.slug, ref.name, ref.hf_repo) if n} if ref else set()
    if model in names:
        return None
    theirs, ours = model_facts(model), model_facts(ref.slug) if ref else None
    if theirs is not None and ours is not None and theirs.id == ours.id:
        return None
    return (
        f"conditions.model: the recipe's model is {' / '.join(sorted(names)) or 'not named'}; "
        f"the result measured {model!r}"
    )


def _same_word(a: str | None, b: str | None) -> bool:
    return (a or "").strip().lower() == (b or "").strip().lower()


def rig_problems(recipe: Recipe, result: BenchResult) -> list[str]:
    """Why the rig the result ran on is not the recipe's hardware, or does not match the result's own points."""
    rig = result.conditions.rig
    if recipe.gpu_count == 0:
        return []
    if rig is None:
        return ["conditions.rig: missing (a GPU result carries the rig summary it ran on)"]
    problems = []
    if len(rig.gpus) != recipe.gpu_count:
        problems.append(
            f"conditions.rig.gpus: the recipe runs on {recipe.gpu_count} GPU(s); the rig lists "
            f"{len(rig.gpus)}"
        )
    for gpu in rig.gpus:
        if not card_fits(recipe, gpu.name or ""):
            cards = " or ".join(h.card for h in recipe.hardware)
            problems.append(
                f"conditions.rig.gpus.{gpu.index}.name: not the recipe's card family ({cards}); "
                f"got {gpu.name!r}"
            )
    names = {g.name for g in rig.gpus}
    for i, point in enumerate(result.perf_points):
        c = point.conditions
        if c is None:
            continue
        if c.gpu_count is not None and c.gpu_count != len(rig.gpus):
            problems.append(
                f"perf_points.{i}.conditions.gpu_count: {c.gpu_count}, but the result's rig lists "
                f"{len(rig.gpus)} GPU(s)"
            )
        if c.card is not None and names and c.card not in names:
            problems.append(
                f"perf_points.{i}.conditions.card: {c.card!r} is not a card of the result's rig "
                f"({', '.join(sorted(n for n in names if n))})"
            )
    return problems


def setup_problems(recipe: Recipe, result: BenchResult) -> list[str]:
    """Engine and quantisation of the result and its points against the recipe's, exactly (case aside)."""
    problems = []
    quant = recipe.models[0].quant if recipe.models else None
    if (
        recipe.engine
        and result.conditions.engine
        and not _same_word(result.conditions.engine, recipe.engine)
    ):
        problems.append(
            f"conditions.engine: the recipe runs {recipe.engine!r}; got {result.conditions.engine!r}"
        )
    for i, point in enumerate(result.perf_points):
        c = point.conditions
        if c is None:
            continue
        if recipe.engine and c.engine is not None and not _same_word(c.engine, recipe.engine):
            problems.append(
                f"perf_points.{i}.conditions.engine: the recipe runs {recipe.engine!r}; got {c.engine!r}"
            )
        if quant and c.quant is not None and not _same_word(c.quant, quant):
            problems.append(
                f"perf_points.{i}.conditions.quant: the recipe's model is {quant!r}; got {c.quant!r}"
            )
    return problems


def rate_problems(recipe: Recipe, point: PerfPoint, where: str) -> list[str]:
    """Every rate positive and finite, and decode below the bandwidth ceiling (x CEILING_MARGIN) where known."""
    problems = []
    for name in RATE_FIELDS:
        value = getattr(point, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            problems.append(f"{where}.{name}: must be a positive, finite number; got {value!r}")
    if problems or point.conditions is None:
        return problems
    model = recipe.models[0].slug if recipe.models else None
    checks = [("decode_tok_s", point)]
    if (
        point.per_request_decode_tok_s_median is not None
    ):  # one request alone: the ceiling at concurrency 1
        checks.append(
            (
                "per_request_decode_tok_s_median",
                point.model_copy(
                    update={"decode_tok_s": point.per_request_decode_tok_s_median, "concurrency": 1}
                ),
            )
        )
    for name, probe in checks:
        # roofline reads only what a PerfPoint with conditions has (concurrency may be None).
        roof, _why = roofline(cast(ComparedPoint, probe), model)
        if (
            roof is not None
            and probe.decode_tok_s is not None
            and probe.decode_tok_s > roof.ceiling_tok_s * CEILING_MARGIN
        ):
            problems.append(
                f"{where}.{name}: {probe.decode_tok_s:g} tok/s is above what the card can do: the "
                f"memory-bandwidth ceiling is {roof.ceiling_tok_s:,.0f} tok/s at concurrency "
                f"{probe.concurrency or 1} (x {CEILING_MARGIN:g} allowed; `rigbook compare` shows it)"
            )
    return problems


def result_problems(result: BenchResult, recipe: Recipe, given: object = None) -> list[str]:
    """Every reason to refuse ``result`` for ``recipe``, one line each (empty: accept).
    ``given``: the JSON as posted, whose own content the hash is checked on (as `load_result`
    checks a file as written); without it, the hash is checked on ``result`` re-serialised."""
    problems = []
    if not (hash_matches(given) if given is not None else verify_hash(result)):
        problems.append(
            "content_hash: does not match the result's content (edited after the run, or missing)"
        )
    named = result.conditions.recipe_slug
    if named is not None and named != recipe.slug:
        problems.append(
            f"conditions.recipe_slug: the result was measured for {named!r}, not {recipe.slug!r}"
        )
    problems += text_problems(result.model_dump(mode="json", exclude={"cells"}))
    wrong_model = model_problem(recipe, result.conditions.model)
    if wrong_model:
        problems.append(wrong_model)
    problems += rig_problems(recipe, result) + setup_problems(recipe, result)
    if result.conditions.rig is not None:
        for gpu in result.conditions.rig.gpus:
            if gpu.power_enforced_limit_w is None:
                problems.append(
                    f"conditions.rig.gpus.{gpu.index}.power_enforced_limit_w: missing (the card's enforced power limit)"
                )
    problems += power_problems(result) + energy_problems(result)
    problems += time_problems(result) + condition_problems(result)
    if not result.perf_points:
        problems.append("perf_points: the result has no perf points")
    model = recipe.models[0].slug if recipe.models else None
    for i, point in enumerate(result.perf_points):
        where = f"perf_points.{i}"
        if point.decode_tok_s is None:
            problems.append(f"{where}.decode_tok_s: missing")
        if point.concurrency is None:
            problems.append(f"{where}.concurrency: missing")
        c = point.conditions
        if c is None:
            problems.append(
                f"{where}.conditions: missing (GPU count, card, power, engine, quant, sampling, reply length, token source)"
            )
            continue
        required: dict[str, object] = {
            "gpu_count": c.gpu_count,
            "engine": c.engine,
            "quant": c.quant,
            "reply_tokens": c.reply_tokens,
            "token_count_source": c.token_count_source,
        }
        if c.gpu_count:
            required |= {"card": c.card, "power_limit_w_per_gpu": c.power_limit_w_per_gpu}
        problems += [
            f"{where}.conditions.{name}: missing"
            for name, value in required.items()
            if value is None
        ]
        if c.sampling is None or c.sampling.temperature is None or c.sampling.top_p is None:
            problems.append(f"{where}.conditions.sampling: temperature and top_p are required")
        problems += fit_problems(recipe, c, f"{where}.conditions")
        problems += rate_problems(recipe, point, where) + point_bound_problems(point, model, where)
    return problems
