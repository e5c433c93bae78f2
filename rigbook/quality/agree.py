"""`rigbook agree`: the same multiple-choice questions to two endpoints, greedy, paired.

Each question goes to A, then to B; the strict rule (rigbook.quality.extract)
reads a letter from each reply. Agreement counts questions where both gave the same letter or
both gave none. With gold answers, each side's accuracy and the exact McNemar test on the
questions exactly one side got right say whether A and B differ in quality, not by chance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from rigbook.quality.chat import Reply, ask, body
from rigbook.quality.extract import EXTRACTION_RULE, LETTERS, extract_letter
from rigbook.quality.result import (
    AgreeConditions,
    AgreeResult,
    AgreeSummary,
    Answer,
    Endpoint,
    QuestionOutcome,
    RunInfo,
    Sampling,
    machine_now,
    save,
)
from rigbook.quality.server import identify
from rigbook.quality.stats import mcnemar_exact_p
from rigbook.quality.suites import Question, Suite
from rigbook.recipe.schema import PerfPoint, QualityMeasure

PROMPT_VERSION = "multiple-choice prompt v1"
_INSTRUCTION = (
    "Answer the multiple-choice question. Reply with the letter of the correct option only."
)


def render(q: Question) -> str:
    """The user message for one question (prompt layout v1)."""
    options = "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(q.options))
    return f"{_INSTRUCTION}\n\nQuestion: {q.question}\n{options}\nAnswer:"


@dataclass
class AgreeSpec:
    a_url: str
    b_url: str
    a_model: str | None
    b_model: str | None
    suite: Suite
    out: Path
    a_recipe: str | None = None
    b_recipe: str | None = None
    max_tokens: int = 16
    seed: int = 0
    stall_s: float = 300.0


def _answer(reply: Reply, q: Question) -> Answer:
    if reply.error:
        return Answer(reply=reply.text, error=reply.error)
    letter = extract_letter(reply.text, len(q.options))
    return Answer(
        reply=reply.text, letter=letter, correct=None if q.answer is None else letter == q.answer
    )


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def summarise(outcomes: list[QuestionOutcome]) -> AgreeSummary:
    """Accuracy, agreement and McNemar over the questions with no failed request."""
    counted = [o for o in outcomes if not o.failed]
    graded = [o for o in counted if o.gold is not None]
    differing = [o.id for o in counted if o.a.letter != o.b.letter]
    summary = AgreeSummary(
        asked=len(outcomes),
        failed=len(outcomes) - len(counted),
        counted=len(counted),
        a_no_answer=sum(o.a.letter is None for o in counted),
        b_no_answer=sum(o.b.letter is None for o in counted),
        agree=len(counted) - len(differing),
        agreement_pct=_pct(len(counted) - len(differing), len(counted)),
        differing=differing,
    )
    if graded:
        only_a = sum(bool(o.a.correct) and not o.b.correct for o in graded)
        only_b = sum(bool(o.b.correct) and not o.a.correct for o in graded)
        a_ok, b_ok = sum(bool(o.a.correct) for o in graded), sum(bool(o.b.correct) for o in graded)
        summary = summary.model_copy(
            update=dict(
                a_correct=a_ok,
                b_correct=b_ok,
                a_accuracy_pct=_pct(a_ok, len(graded)),
                b_accuracy_pct=_pct(b_ok, len(graded)),
                only_a_correct=only_a,
                only_b_correct=only_b,
                mcnemar_p=mcnemar_exact_p(only_a, only_b),
            )
        )
    return summary


def _label(side: Endpoint) -> str:
    return side.recipe or f"{side.model} at {side.url}"


def quality_points(result: AgreeResult, evidence: str) -> list[PerfPoint]:
    """One point per side: its accuracy (where graded) and its agreement with the other side."""
    s, c = result.summary, result.conditions
    if s is None:
        return []
    points = []
    for me, other, correct, acc in (
        (c.a, c.b, s.a_correct, s.a_accuracy_pct),
        (c.b, c.a, s.b_correct, s.b_accuracy_pct),
    ):
        measure = QualityMeasure(
            test="multiple_choice",
            suite=c.suite.name,
            suite_version=c.suite.version,
            questions_hash=c.suite.questions_hash,
            n=s.counted,
            passed=correct,
            accuracy_pct=acc,
            reference=_label(other),
            agreement_pct=s.agreement_pct,
            mcnemar_p=s.mcnemar_p,
            evidence=evidence,
        )
        score = f"{correct}/{s.counted} right, " if correct is not None else ""
        points.append(
            PerfPoint(
                claimed_by="rigbook agree",
                quality=measure,
                notes=f"rigbook agree: {me.model} on {c.suite.name} {c.suite.version}: {score}"
                f"{s.agreement_pct}% agreement with {_label(other)}"
                + (f", McNemar p={s.mcnemar_p:.3g}" if s.mcnemar_p is not None else ""),
            )
        )
    return points


async def run_agree(
    spec: AgreeSpec, info: RunInfo, progress: Callable[[int, QuestionOutcome], None]
) -> AgreeResult:
    """Ask every question of both sides, saving the result after each; returns the result."""
    sampling = Sampling(seed=spec.seed, max_tokens=spec.max_tokens)
    limits = httpx.Limits(max_connections=4)
    async with httpx.AsyncClient(limits=limits) as client:
        a, b = await asyncio.gather(
            identify(spec.a_url, spec.a_model), identify(spec.b_url, spec.b_model)
        )
        result = AgreeResult(
            conditions=AgreeConditions(
                a=Endpoint(**a.model_dump(), recipe=spec.a_recipe),
                b=Endpoint(**b.model_dump(), recipe=spec.b_recipe),
                suite=spec.suite.info,
                prompt=PROMPT_VERSION,
                extraction=EXTRACTION_RULE,
                sampling=sampling,
                run=info,
            )
        )
        evidence = f"rigbook agree result {spec.out.name}"
        save(result, spec.out)
        for i, q in enumerate(spec.suite.questions):
            message = render(q)
            # One after the other: a llama-cpp-python server cuts a stream when a second arrives,
            # and A and B may be one server.
            ra = await ask(client, a.url, body(a.model, message, sampling), spec.stall_s)
            rb = await ask(client, b.url, body(b.model, message, sampling), spec.stall_s)
            outcome = QuestionOutcome(id=q.id, gold=q.answer, a=_answer(ra, q), b=_answer(rb, q))
            result.questions.append(outcome)
            result.summary = summarise(result.questions)
            result.quality_points = quality_points(result, evidence)
            result.conditions.run.machine.load_end = machine_now().load_start
            result.conditions.run.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
            save(result, spec.out)
            progress(i, outcome)
        result.complete = True
        save(result, spec.out)
        return result
