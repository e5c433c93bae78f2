"""Line perf points up and build the Comparison.

Two points line up when their concurrencies are equal and their context lengths are of one
class (:func:`rigbook.compare.rules.same_context`) or one is null (the context-length rule then
adds an "unknown" caveat). Every
pair of arguments is compared, in the order given: A is the earlier argument and each
ratio is A's figure as a percentage of B's.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import PurePath

from rigbook.capacity.slo import canonical_slo
from rigbook.compare import acceptance
from rigbook.compare.derived import derive
from rigbook.compare.quality import quality_pairs
from rigbook.compare.rules import (
    CONTEXT_TOLERANCE,
    SHORT_CONTEXT,
    context_label,
    judge,
    same_context,
)
from rigbook.compare.sources import load_source, require_points
from rigbook.compare.verdict import aspect_verdicts, summarise
from rigbook.comparison import ComparedPoint, Comparison, PairComparison, PointPair, Side, Source
from rigbook.errors import InputError


def _same_slo(a: str | None, b: str | None) -> bool:
    """One SLO in canonical form (term order, spacing, units aside); text this version cannot
    read matches only itself."""
    if a is None or b is None:
        return a is b
    return (canonical_slo(a) or a.strip()) == (canonical_slo(b) or b.strip())


def _same_context(a: ComparedPoint, b: ComparedPoint) -> bool:
    return (
        a.context_len is None or b.context_len is None or same_context(a.context_len, b.context_len)
    )


def _lines_up(a: ComparedPoint, b: ComparedPoint) -> bool:
    if a.slo is not None or b.slo is not None:
        # A capacity lines up with another capacity measured under the same SLO, whatever its users.
        return _same_slo(a.slo, b.slo) and _same_context(a, b)
    return a.concurrency == b.concurrency and _same_context(a, b)


def _pct(a: float | None, b: float | None) -> float | None:
    return 100.0 * a / b if a is not None and b else None


def _label(p: ComparedPoint) -> str:
    ctx = f", context {context_label(p.context_len)}" if p.context_len is not None else ""
    return f"concurrency {p.concurrency}{ctx}"


def same_definition(point: ComparedPoint, other: ComparedPoint) -> ComparedPoint:
    """``point`` restated in ``other``'s rate definition where it holds that rate too.

    A rigbook point holds two rates: ``decode_tok_s`` (the aggregate, TTFT included) and
    ``per_request_decode_tok_s_median``. Against a claim of a per-request decode rate, the
    median is the figure that means the same; every other difference stays a difference (and an
    unstated definition stays a caveat)."""
    mine, theirs = point.conditions.rate_definition, other.conditions.rate_definition
    if (
        theirs == "per_request_decode"
        and mine != theirs
        and mine is not None
        and point.per_request_decode_tok_s_median is not None
    ):
        note = (
            f"decode_tok_s here is per_request_decode_tok_s_median "
            f"({point.per_request_decode_tok_s_median:.1f}), restated from {mine} "
            f"({point.decode_tok_s if point.decode_tok_s is not None else 'null'}) to match the "
            "other side's per_request_decode"
        )
        return point.model_copy(
            update={
                "decode_tok_s": point.per_request_decode_tok_s_median,
                "notes": f"{note}; {point.notes}" if point.notes else note,
                "conditions": point.conditions.model_copy(
                    update={"rate_definition": "per_request_decode"}
                ),
            }
        )
    return point


def pair_points(a_src: Source, a: ComparedPoint, b_src: Source, b: ComparedPoint) -> PointPair:
    """One lined-up pair: derived figures, ratios, rule outcomes and verdicts. Where one side
    holds the other's rate definition as a second figure, that figure is compared
    (:func:`same_definition`)."""
    a, b = same_definition(a, b), same_definition(b, a)
    side_a = Side(point=a, derived=derive(a, a_src.model))
    side_b = Side(point=b, derived=derive(b, b_src.model))
    outcomes = judge(a, a_src.model, b, b_src.model)
    decode_ratio = _pct(a.decode_tok_s, b.decode_tok_s)
    accepted = acceptance.gap(a, b, decode_ratio)
    same = [o.rule for o in outcomes if o.kind == "equal"]
    if accepted and not acceptance.reasons(accepted):
        same.append(acceptance.CONDITION)  # both known and alike: the gap is not the drafter's
    users_ratio = _pct(a.users_at_slo, b.users_at_slo) if a.slo is not None else None
    return PointPair(
        concurrency=a.concurrency,
        context_len=a.context_len if a.context_len is not None else b.context_len,
        a=side_a,
        b=side_b,
        decode_ratio_pct=decode_ratio,
        slo=a.slo,
        users_ratio_pct=users_ratio,
        per_gpu_ratio_pct=_pct(
            side_a.derived.decode_tok_s_per_gpu, side_b.derived.decode_tok_s_per_gpu
        ),
        same=same,
        acceptance=accepted,
        # Under an SLO the throughput that counts is the users served.
        verdicts=aspect_verdicts(
            outcomes,
            side_a.derived.tok_s_per_w,
            side_b.derived.tok_s_per_w,
            users_ratio if a.slo is not None else decode_ratio,
            acceptance.reasons(accepted),
        ),
    )


def compare_pair(a: Source, b: Source) -> PairComparison:
    """Source A against source B."""
    pairs = [pair_points(a, pa, b, pb) for pa in a.points for pb in b.points if _lines_up(pa, pb)]
    pairs.sort(key=lambda p: (p.concurrency, p.context_len or 0))
    return PairComparison(
        a=a.name,
        b=b.name,
        points=pairs,
        unmatched_a=[_label(p) for p in a.points if not any(_lines_up(p, q) for q in b.points)],
        unmatched_b=[_label(q) for q in b.points if not any(_lines_up(p, q) for p in a.points)],
        verdicts=summarise([p.verdicts for p in pairs]),
        quality=quality_pairs(a.quality, b.quality),
    )


def distinct_names(sources: list[Source]) -> list[Source]:
    """Sources whose names are all different: two files called result.json are told apart by
    as many of their folders as it takes (h200/result.json, cpu/result.json)."""
    depth = 1
    while True:
        names = [
            s.name if s.kind == "recipe" else "/".join(PurePath(s.ref).parts[-depth:])
            for s in sources
        ]
        longest = max(len(PurePath(s.ref).parts) for s in sources)
        if len(set(names)) == len(names) or depth >= longest:
            break
        depth += 1
    return [s.model_copy(update={"name": n}) for s, n in zip(sources, names, strict=True)]


def _why_nothing_lines_up(sources: list[Source]) -> tuple[str, str]:
    """The message and remedy for no pair lining up: what the sources do not share."""
    shared = [
        c
        for a, b in combinations(sources, 2)
        for c in {p.concurrency for p in a.points} & {q.concurrency for q in b.points}
        if c is not None
    ]
    tolerance = (
        f"context lengths match when both are short (up to {SHORT_CONTEXT} tokens) or the longer is "
        f"at most {CONTEXT_TOLERANCE:g}x the shorter"
    )
    if shared:
        levels = ", ".join(str(c) for c in sorted(set(shared)))
        return (
            f"no perf points line up: the sources share concurrency {levels}, but not a context "
            f"length there ({tolerance})",
            "Compare results measured with prompts of the same length class; each source's points are listed.",
        )
    return (
        "no perf points line up: no two sources share a concurrency level",
        "Compare results measured at the same concurrency levels; each source's levels are listed.",
    )


def same_workload(sources: list[Source]) -> None:
    """Refuse (``E_WORKLOAD_MISMATCH``) results that ran different workloads."""
    ran = {s.workload for s in sources if s.workload is not None}
    if len(ran) > 1:
        # Different requests measure different work: a multi-turn chat's TTFT rides on the
        # prefix cache, a prose burst's does not. No rule's caveat makes their ratio mean anything.
        raise InputError(
            "E_WORKLOAD_MISMATCH",
            f"the results ran different workloads: {', '.join(sorted(ran))}",
            "Compare results of one workload: bench each endpoint with the same --workload "
            "(`rigbook bench URL --workload NAME`).",
            details=[f"{s.name}: {s.workload}" for s in sources if s.workload is not None],
        )


def compare_sources(sources: list[Source]) -> Comparison:
    """Every pair of sources; at least one pair must line up somewhere."""
    sources = distinct_names(sources)
    same_workload(sources)
    pairs = [compare_pair(a, b) for a, b in combinations(sources, 2)]
    slos = {p.slo for s in sources for p in s.points if p.slo is not None}
    if not any(p.points or p.quality for p in pairs) and slos:
        raise InputError(
            "E_NOT_COMPARABLE",
            "capacities compare only under the same SLO, and only with capacities",
            "Measure both with `rigbook capacity` and the same --slo.",
            details=[
                f"{s.name}: "
                + (
                    "; ".join(f"SLO {p.slo}" for p in s.points if p.slo)
                    or "no capacity (perf points at fixed concurrency)"
                )
                for s in sources
            ],
        )
    if not any(p.points or p.quality for p in pairs):
        message, remedy = _why_nothing_lines_up(sources)
        raise InputError(
            "E_NOT_COMPARABLE",
            message,
            remedy,
            details=[f"{s.name}: " + "; ".join(_label(p) for p in s.points) for s in sources],
        )
    return Comparison(sources=sources, pairs=pairs)


def compare_refs(refs: list[str]) -> Comparison:
    """Resolve each argument (bench result file, recipe file or URL, catalog slug) and compare them all."""
    if len(refs) < 2:
        raise InputError(
            "E_INPUT",
            f"compare needs at least two sources, got {len(refs)}",
            "Give two or more bench result files, recipe files or catalog slugs.",
        )
    sources = [load_source(r, points=False) for r in refs]
    # A different workload is the first thing to say, even of a result with no perf point.
    same_workload(sources)
    return compare_sources([require_points(s) for s in sources])
