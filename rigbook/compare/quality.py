"""Quality points like for like: a needle or multiple-choice point of A against one of B.

Two quality points of the same test are comparable only when they asked the same thing: for a
needle, the same haystack, context length, depths, facts per probe, number of probes and cache
state; for a multiple-choice suite, the same suite and version (or question set) and the same
number of questions. Anything that differs, or that one side does not state, makes the pair
"not comparable", and each such condition is named. Each side's score carries its agreement and
exact McNemar p where the point states them; a claim of a test the other side does not measure
is listed on its own.
"""

from __future__ import annotations

from typing import Literal

from rigbook.comparison import QualityPair, QualityPoint, Reason, Source
from rigbook.quality.claims import label, score
from rigbook.quality.present import claim_line, paired_stats
from rigbook.recipe.schema import QualityMeasure


def _measure(p: QualityPoint) -> QualityMeasure:
    """A quality point's measure; every point in a source's ``quality`` has one."""
    assert p.quality is not None, "not a quality point"
    return p.quality


def _needle_keys(p: QualityPoint, q: QualityMeasure) -> dict[str, object]:
    return {
        "haystack": q.suite_version,
        "context length": p.context_len,
        "depths": tuple(q.depths) if q.depths is not None else None,
        "facts per probe": q.facts,
        "probe count": q.n,
        "cache": q.cache,
    }


def _choice_keys(p: QualityPoint, q: QualityMeasure) -> dict[str, object]:
    version = q.questions_hash or q.suite_version
    return {"suite": q.suite, "suite version / questions": version, "question count": q.n}


def judge_quality(a: QualityPoint, b: QualityPoint) -> QualityPair:
    """Whether two quality points of the same test measured the same thing."""
    qa, qb = _measure(a), _measure(b)
    keys = _needle_keys if qa.test == "needle" else _choice_keys
    ka, kb = keys(a, qa), keys(b, qb)
    reasons = []
    for name in ka:
        va, vb = ka[name], kb[name]
        kind: Literal["unknown_both", "unknown_one_side", "differs"]
        if va is None and vb is None:
            kind, message = "unknown_both", f"{name} unknown on both sides"
        elif va is None or vb is None:
            kind, message = "unknown_one_side", f"{name} unknown on {'A' if va is None else 'B'}"
        elif va != vb:
            kind, message = "differs", f"{name} differs: {va} vs {vb}"
        else:
            continue
        reasons.append(
            Reason(
                condition=name,
                severity="not_comparable",
                kind=kind,
                a=None if va is None else str(va),
                b=None if vb is None else str(vb),
                message=message,
            )
        )
    return QualityPair(
        test=qa.test,
        a_label=label(a),
        b_label=label(b),
        a_score=score(a) + paired_stats(a),
        b_score=score(b) + paired_stats(b),
        verdict="not comparable" if reasons else "comparable",
        reasons=reasons,
    )


def quality_pairs(a: list[QualityPoint], b: list[QualityPoint]) -> list[QualityPair]:
    """Every pair of A's and B's quality points of the same test."""
    return [judge_quality(p, q) for p in a for q in b if _measure(p).test == _measure(q).test]


def quality_lines(pairs: list[QualityPair]) -> list[str]:
    """Plain lines for both renderers: one per pair, then its reasons."""
    lines = []
    for p in pairs:
        lines.append(
            f"{p.test.replace('_', ' ')}: A {p.a_label}: {p.a_score} | B {p.b_label}: "
            f"{p.b_score} — {p.verdict}"
        )
        lines += [f"  ✗ {r.message}" for r in p.reasons]
    return lines


def quality_section(pairs: list[QualityPair], a: Source, b: Source) -> list[str]:
    """The pairs' lines, then each quality claim of a test the other side states nothing of."""
    lines = quality_lines(pairs)
    for letter, mine, theirs in (("A", a.quality, b.quality), ("B", b.quality, a.quality)):
        tests = {_measure(q).test for q in theirs}
        lines += [
            f"only {letter} states: {claim_line(p)}" for p in mine if _measure(p).test not in tests
        ]
    return lines
