"""What a reproduction measures: the claim's own conditions, and what it assumes where a claim is silent.

The concurrency levels are those of the recipe's perf points. Each claim keeps the rate
definition it states; one that states none is read as the design's conventions say: a
figure at one request is the per-request decode rate, a figure at N requests the aggregate of
the N (rigbook's ``aggregate_with_ttft``). Sampling, reply length and thinking come from the
bench profile (the seed profile by default, the seed guide's conditions); a claim that states
another reply length is measured at that length. Every such choice is listed in ``assumed``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from rigbook.bench.profiles import Profile, get_profile
from rigbook.compare.sources import source_from_recipe
from rigbook.comparison import ComparedPoint, Source
from rigbook.recipe.schema import Recipe, Sampling

DEFAULT_PROFILE = "seed"


class ClaimPlan(BaseModel):
    """The bench a reproduction runs and the claims it compares with, as they are read."""

    profile: str
    levels: list[int] = Field(description="Concurrency levels, from the claims (or the profile's).")
    max_tokens: int
    claims: Source = Field(description="The recipe's claims, each condition stated or assumed.")
    assumed: list[str] = Field(
        default_factory=list,
        description="Each condition a claim does not state, and what was assumed.",
    )


def _assume(
    point: ComparedPoint, profile: Profile, max_tokens: int
) -> tuple[ComparedPoint, list[str]]:
    c = point.conditions
    notes: list[str] = []
    update: dict = {}
    if c.rate_definition is None:
        definition = "per_request_decode" if point.concurrency == 1 else "aggregate_with_ttft"
        update["rate_definition"] = definition
        notes.append(
            "rate definition not stated; read as "
            + (
                "one request's decode rate (per_request_decode)"
                if definition == "per_request_decode"
                else "the aggregate of the N requests, TTFT included (aggregate_with_ttft)"
            )
        )
    if c.sampling is None:
        update["sampling"] = Sampling(temperature=profile.temperature, top_p=profile.top_p)
        notes.append(
            f"sampling not stated; assumed temperature {profile.temperature:g}, top_p {profile.top_p:g}"
        )
    if c.reply_tokens is None:
        update["reply_tokens"] = max_tokens
        notes.append(f"reply length not stated; assumed {max_tokens} tokens")
    if c.thinking is None:
        update["thinking"] = profile.thinking
        notes.append(f"thinking not stated; assumed {'on' if profile.thinking else 'off'}")
    if c.workload is None:
        update["workload"] = profile.workload
        notes.append(f"workload not stated; assumed {profile.workload} prompts")
    return point.model_copy(update={"conditions": c.model_copy(update=update)}), notes


def plan_claims(
    recipe: Recipe,
    ref: str,
    *,
    profile: str | None = None,
    levels: list[int] | None = None,
    max_tokens: int | None = None,
) -> ClaimPlan:
    """The bench to run for ``recipe`` and its claims with every unstated condition assumed.

    ``profile``, ``levels`` and ``max_tokens`` override what the claims give; an override is said
    in ``assumed`` too, since the numbers are then measured under other conditions than claimed."""
    source = source_from_recipe(ref, recipe)
    chosen = get_profile(profile or DEFAULT_PROFILE)
    assumed: list[str] = []
    stated = {p.conditions.reply_tokens for p in source.points if p.conditions.reply_tokens}
    if max_tokens is None and len(stated) == 1:
        max_tokens = stated.pop()
    elif max_tokens is None and len(stated) > 1:
        assumed.append(
            f"the claims state several reply lengths ({', '.join(str(s) for s in sorted(stated))}); "
            f"measured at the profile's {chosen.max_tokens}"
        )
    length = max_tokens or chosen.max_tokens
    claimed = sorted({p.concurrency for p in source.points})
    if levels is None:
        levels = claimed or list(chosen.concurrency)
    if not claimed:
        assumed.append(
            f"the recipe states no performance claim: measured at levels "
            f"{', '.join(str(c) for c in levels)}, with nothing to compare against"
        )
    elif set(levels) != set(claimed):
        assumed.append(
            f"levels {', '.join(str(c) for c in levels)} asked for; the claims are at "
            f"{', '.join(str(c) for c in claimed)}"
        )
    points = []
    where: dict[str, list[int]] = {}  # each assumption once, with the claims it was made for
    for point in source.points:
        read, notes = _assume(point, chosen, length)
        points.append(read)
        for text in notes:
            where.setdefault(text, []).append(point.concurrency)
    assumed += [
        f"claims at concurrency {', '.join(str(c) for c in sorted(set(levels_of)))}: {text}"
        for text, levels_of in where.items()
    ]
    return ClaimPlan(
        profile=chosen.name,
        levels=sorted(set(levels)),
        max_tokens=length,
        claims=source.model_copy(update={"points": points}),
        assumed=assumed,
    )
