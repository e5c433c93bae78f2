"""Quality claims a recipe record states in prose, read into quality points.

The seed record has no field for them: its needle claim is a perf point whose only content is
its notes ("Salted-needle retrieval pass at 1,040,355-token prompt, both facts retrieved in
249 s cold"), and its MMLU-Pro claims sit in the performance notes ("MMLU-Pro 168/200 (200q,
p=1.0 vs TP4) and 82.6% (1000q)"). Each pattern below reads one such sentence; what it does
not say stays null, and the sentence itself is kept as the point's evidence.
"""

from __future__ import annotations

import re

from rigbook.recipe.schema import PerfPoint, QualityMeasure, Recipe

_NEEDLE = re.compile(
    r"salted-needle retrieval (?P<verdict>pass|fail)\w* at (?:a )?(?P<tokens>[\d,]+)-token prompt"
    r"(?:, (?P<facts>both|all|one|two|three|\d+) facts? retrieved)?"
    r"(?:.*?\bin (?P<secs>[\d.]+) ?s (?P<cache>cold|warm))?",
    re.IGNORECASE,
)
_MMLU_PAIRED = re.compile(
    r"MMLU-Pro (?P<right>\d+)/(?P<n>\d+) \((?P<q>\d+)q, p=(?P<p>[\d.]+) vs (?P<ref>[^)]+)\)"
)
_MMLU_PCT = re.compile(r"(?:MMLU-Pro [^;]*?\band |MMLU-Pro )(?P<pct>[\d.]+) ?% \((?P<n>\d+)q\)")
_COUNTS = {"one": 1, "two": 2, "both": 2, "three": 3}


def needle_claim(point: PerfPoint) -> PerfPoint | None:
    """A salted-needle claim read from a perf point's notes, or None when it states none."""
    found = _NEEDLE.search(point.notes or "")
    if found is None or point.quality is not None:
        return None
    tokens = int(found["tokens"].replace(",", ""))
    facts = found["facts"]
    n_facts = None if facts in (None, "all") else _COUNTS.get(facts.lower()) or int(facts)
    passed = 1 if found["verdict"].lower() == "pass" else 0
    measure = QualityMeasure(
        test="needle",
        n=1,
        passed=passed,
        facts=n_facts,
        prompt_tokens=tokens,
        cache=("cold" if found["cache"].lower() == "cold" else "warm") if found["cache"] else None,
        evidence=f"notes: {point.notes}",
    )
    ttft = float(found["secs"]) * 1000 if found["secs"] else None
    return point.model_copy(
        update={
            "quality": measure,
            "ttft_ms": point.ttft_ms or ttft,
            "concurrency": point.concurrency or 1,
        }
    )


def _mmlu(m: re.Match[str], **measured) -> QualityMeasure:
    """An MMLU-Pro claim of ``m['n']`` questions, quoted from the notes as its evidence."""
    return QualityMeasure(
        test="multiple_choice",
        suite="MMLU-Pro",
        n=int(m["n"]),
        evidence=f"performance notes: {m.group(0)}",
        **measured,
    )


def notes_claims(notes: str, claimed_by: str | None) -> list[PerfPoint]:
    """MMLU-Pro claims in a performance notes text: paired (n, right, p vs reference) and plain."""
    points = []
    for m in _MMLU_PAIRED.finditer(notes):
        measure = _mmlu(
            m,
            passed=int(m["right"]),
            accuracy_pct=round(100 * int(m["right"]) / int(m["n"]), 2),
            reference=m["ref"].strip(),
            mcnemar_p=float(m["p"]),
        )
        points.append(PerfPoint(claimed_by=claimed_by, notes=m.group(0), quality=measure))
    for m in _MMLU_PCT.finditer(notes):
        measure = _mmlu(m, accuracy_pct=float(m["pct"]))
        points.append(
            PerfPoint(
                claimed_by=claimed_by, notes=f"MMLU-Pro {m['pct']}% ({m['n']}q)", quality=measure
            )
        )
    return points


def recipe_quality(recipe: Recipe) -> list[PerfPoint]:
    """Every quality point of a recipe: those it carries, and those read from its prose."""
    points = [p for p in recipe.perf_points if p.quality is not None]
    points += [c for p in recipe.perf_points if (c := needle_claim(p)) is not None]
    for perf in recipe.performance:
        if perf.metrics:
            parsed = perf.metrics_parsed
            if parsed and parsed.notes:
                points += notes_claims(parsed.notes, perf.claimed_by)
    return points


def score(p: PerfPoint) -> str:
    """A point's result in words: '5/5 probes passed', '168/200 right (84.0%)', '82.6% (1000q)'."""
    q = p.quality
    assert q is not None, "not a quality point"
    if q.test == "needle":
        passed = "?" if q.passed is None else q.passed
        tokens = f" at {q.prompt_tokens:,} prompt tokens" if q.prompt_tokens else ""
        return f"{passed}/{q.n} probes passed{tokens}"
    if q.passed is not None:
        pct = f" ({q.accuracy_pct:.1f}%)" if q.accuracy_pct is not None else ""
        return f"{q.passed}/{q.n} right{pct}"
    return f"{q.accuracy_pct}% ({q.n}q)" if q.accuracy_pct is not None else "no score"


def label(p: PerfPoint) -> str:
    """What a point measured, e.g. 'needle, context 2048' or 'multiple choice, MMLU-Pro'."""
    q = p.quality
    assert q is not None, "not a quality point"
    if q.test == "needle":
        return "needle" + (f", context {p.context_len}" if p.context_len else "")
    extra = f" vs {q.reference}" if q.reference else ""
    return f"multiple choice, {q.suite or 'suite unknown'}{extra}"
