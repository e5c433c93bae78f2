"""Multiple-choice question suites for `rigbook agree`: built-in, a JSONL file, or a hub dataset.

A suite is data with a name, a version and a content hash over every question, so a result
says exactly which questions it asked. The built-in suites are generated at a fixed seed (no
download); a test pins each (name, version) to its hash, so a change needs a new version, as
for the bench profiles.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rigbook.errors import InputError
from rigbook.hashing import content_hash
from rigbook.quality.extract import LETTERS


class Question(BaseModel):
    """One multiple-choice question; ``answer`` is the gold letter, when the suite has one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    question: str
    options: list[str] = Field(min_length=2, max_length=len(LETTERS))
    answer: str | None = Field(default=None, description="Gold option letter, A-J.")
    category: str | None = None

    @field_validator("answer")
    @classmethod
    def _answer_is_an_option_letter(cls, value: str | None, info) -> str | None:
        options = info.data.get("options") or []
        if value is not None and value not in LETTERS[: len(options)]:
            raise ValueError(f"answer {value!r} is not the letter of one of {len(options)} options")
        return value


class SuiteInfo(BaseModel):
    """What identifies a suite in a result: enough to ask the same questions again."""

    name: str
    version: str = Field(
        description="Built-in: 'vN'; a file: its sha256; a hub dataset: the commit."
    )
    source: str = Field(description="builtin, a file path, or hf:OWNER/NAME@COMMIT:PATH.")
    questions_hash: str = Field(description="Content hash of the questions asked, in order.")
    n: int
    selection: str = Field(description="How the n questions were picked from the suite.")


class Suite(BaseModel):
    """A suite's identity and the questions to ask."""

    info: SuiteInfo
    questions: list[Question]


def _options(rng: random.Random, answer: int, distractors: set[int]) -> tuple[list[str], str]:
    """Four options: the answer and three distinct distractors, shuffled; and the gold letter."""
    picked = [*rng.sample(sorted(distractors - {answer}), 3), answer]
    rng.shuffle(picked)
    return [str(v) for v in picked], LETTERS[picked.index(answer)]


def _arithmetic(rng: random.Random, i: int) -> Question:
    a, b = rng.randint(12, 98), rng.randint(12, 98)
    op = rng.choice("+-")
    answer = a + b if op == "+" else a - b
    near = {answer + d for d in (-11, -10, -2, -1, 1, 2, 9, 10, 11)}
    options, gold = _options(rng, answer, near)
    return Question(
        id=f"arith-{i:03d}",
        question=f"What is {a} {op} {b}?",
        options=options,
        answer=gold,
        category="arithmetic",
    )


_WORDS = (
    "amber",
    "birch",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "grove",
    "heron",
    "indigo",
    "juniper",
    "kestrel",
    "lagoon",
    "marble",
    "nectar",
    "onyx",
    "pebble",
    "quartz",
    "raven",
    "sorrel",
    "thistle",
    "umber",
    "violet",
    "willow",
    "yarrow",
    "zephyr",
)


def _lookup(rng: random.Random, i: int) -> Question:
    names = rng.sample(_WORDS, 5)
    values = rng.sample(range(10, 100), 5)
    table = ", ".join(f"{n} = {v}" for n, v in zip(names, values, strict=True))
    asked = rng.randrange(5)
    options, gold = _options(rng, values[asked], set(values) | {values[asked] + 1})
    return Question(
        id=f"lookup-{i:03d}",
        question=f"Given {table}. What is the value of {names[asked]}?",
        options=options,
        answer=gold,
        category="lookup",
    )


def _generated(seed: int, size: int) -> list[Question]:
    rng = random.Random(seed)
    makers: tuple[Callable[[random.Random, int], Question], ...] = (_arithmetic, _lookup)
    return [makers[i % 2](rng, i) for i in range(size)]


# (name, version) -> (seed, size). Never edit a shipped entry: add a new version.
_BUILTIN: dict[tuple[str, int], tuple[int, int]] = {("generated", 1): (20261203, 1000)}
DEFAULT_SUITE = "generated"


def builtin_questions(name: str, version: int | None = None) -> tuple[int, list[Question]]:
    """A built-in suite's version and all its questions."""
    versions = sorted(v for (n, v) in _BUILTIN if n == name)
    if not versions:
        raise InputError(
            "E_SUITE",
            f"no built-in suite named {name!r}",
            f"Use {DEFAULT_SUITE!r}, a JSONL file, or hf:OWNER/NAME@COMMIT.",
        )
    chosen = versions[-1] if version is None else version
    if chosen not in versions:
        raise InputError(
            "E_SUITE", f"suite {name!r} has no version {chosen}", f"Versions: {versions}."
        )
    seed, size = _BUILTIN[(name, chosen)]
    return chosen, _generated(seed, size)


def list_builtin() -> list[tuple[str, int]]:
    """Every shipped (name, version)."""
    return sorted(_BUILTIN)


def first_n(questions: list[Question], n: int, where: str) -> list[Question]:
    """The first ``n`` questions; E_SUITE when there are fewer."""
    if n > len(questions):
        raise InputError(
            "E_SUITE",
            f"{where} has {len(questions)} questions, fewer than --n {n}",
            f"Use --n {len(questions)} or less.",
        )
    return questions[:n]


def make_suite(
    name: str, version: str, source: str, questions: list[Question], selection: str
) -> Suite:
    info = SuiteInfo(
        name=name,
        version=version,
        source=source,
        n=len(questions),
        selection=selection,
        questions_hash=content_hash([q.model_dump(mode="json") for q in questions]),
    )
    return Suite(info=info, questions=questions)


def jsonl_suite(path: Path, n: int) -> Suite:
    """A JSONL file: one object per line with question, options, and optionally answer, id."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError("E_SUITE", f"cannot read {path}: {exc.strerror or exc}") from exc
    questions = []
    for no, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if isinstance(data, dict):
                data.setdefault("id", str(no))
            questions.append(Question.model_validate(data))
        except (json.JSONDecodeError, ValidationError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else exc.errors()[0]["msg"]
            raise InputError(
                "E_SUITE",
                f"{path} line {no} is not a question: {msg}",
                'Each line: {"question": ..., "options": [...], "answer": "B"}'
                " (answer and id optional).",
            ) from exc
    version = "sha256:" + hashlib.sha256(raw).hexdigest()
    return make_suite(path.name, version, str(path), first_n(questions, n, str(path)), f"first {n}")
