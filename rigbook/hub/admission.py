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

import re

from rigbook.bench.result import BenchResult, verify_hash
from rigbook.recipe.schema import PerfConditions, Recipe
from rigbook.rig.cards import parse_card

MEASURED = "measured"


def recipe_problems(recipe: Recipe) -> list[str]:
    """Reasons to refuse a recipe write, one line each: perf points that call themselves measured."""
    return [f"perf_points.{i}.claimed_by: {MEASURED!r} is set by the hub for points of a published bench result "
            f"(POST /api/v1/recipes/{{slug}}/results); remove the point or say who claims it (e.g. 'submitter'); "
            f"got {point.claimed_by!r}"
            for i, point in enumerate(recipe.perf_points) if (point.claimed_by or "").strip().lower() == MEASURED]


def _card_words(name: str) -> set[str]:
    # The card's model words without maker, memory size or variant: a Max-Q and a Workstation card are one family.
    return set(parse_card(name).model)


def fit_problems(recipe: Recipe, conditions: PerfConditions, where: str) -> list[str]:
    """Why a point measured under ``conditions`` does not belong to ``recipe``'s hardware (GPU count, card family)."""
    problems = []
    if conditions.gpu_count is not None and conditions.gpu_count != recipe.gpu_count:
        problems.append(f"{where}.gpu_count: the recipe runs on {recipe.gpu_count} GPU(s); got {conditions.gpu_count}")
    families = [_card_words(v) for h in recipe.hardware for v in (h.card, h.card_family) if v]
    if conditions.gpu_count and conditions.card and families:
        have = _card_words(conditions.card)
        if not any(family and family <= have for family in families):
            cards = " or ".join(h.card for h in recipe.hardware)
            problems.append(f"{where}.card: not the recipe's card family ({cards}); got {conditions.card!r}")
    return problems


def _model_words(name: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", name.lower()) if w}


def model_problem(recipe: Recipe, model: str) -> str | None:
    """Why ``model`` (the id a result sent) is not the recipe's served model; None when it may be.

    Only a recipe that names the id its server answers to (``rigbook.serve.model_id``) is checked, and an alias
    passes: the two ids agree when the words of one are all in the other (``smollm2`` for ``smollm2-135m-instruct``).
    """
    served = recipe.ext.serve.model_id if recipe.ext.serve else None
    if not served:
        return None
    have, want = _model_words(model), _model_words(served)
    if have and (have <= want or want <= have):
        return None
    return f"conditions.model: the recipe's server answers to {served!r}; the result measured {model!r}"


def result_problems(result: BenchResult, recipe: Recipe) -> list[str]:
    """Every reason to refuse ``result`` for ``recipe``, one line each (empty: accept)."""
    problems = []
    if not verify_hash(result):
        problems.append("content_hash: does not match the result's content (edited after the run, or missing)")
    named = result.conditions.recipe_slug
    if named is not None and named != recipe.slug:
        problems.append(f"conditions.recipe_slug: the result was measured for {named!r}, not {recipe.slug!r}")
    wrong_model = model_problem(recipe, result.conditions.model)
    if wrong_model:
        problems.append(wrong_model)
    if result.conditions.rig is not None:
        for gpu in result.conditions.rig.gpus:
            if gpu.power_enforced_limit_w is None:
                problems.append(f"conditions.rig.gpus.{gpu.index}.power_enforced_limit_w: missing (the card's enforced power limit)")
    if not result.perf_points:
        problems.append("perf_points: the result has no perf points")
    for i, point in enumerate(result.perf_points):
        where = f"perf_points.{i}"
        if point.decode_tok_s is None:
            problems.append(f"{where}.decode_tok_s: missing")
        if point.concurrency is None:
            problems.append(f"{where}.concurrency: missing")
        c = point.conditions
        if c is None:
            problems.append(f"{where}.conditions: missing (GPU count, card, power, engine, quant, sampling, reply length, token source)")
            continue
        required: dict[str, object] = {"gpu_count": c.gpu_count, "engine": c.engine, "quant": c.quant, "reply_tokens": c.reply_tokens,
                    "token_count_source": c.token_count_source}
        if c.gpu_count:
            required |= {"card": c.card, "power_limit_w_per_gpu": c.power_limit_w_per_gpu}
        problems += [f"{where}.conditions.{name}: missing" for name, value in required.items() if value is None]
        if c.sampling is None or c.sampling.temperature is None or c.sampling.top_p is None:
            problems.append(f"{where}.conditions.sampling: temperature and top_p are required")
        problems += fit_problems(recipe, c, f"{where}.conditions")
    return problems
