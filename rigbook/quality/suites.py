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
    note: str | None = Field(
        default=None, description="Why fewer questions were asked than --n named, if they were."
    )


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


def first_n(
    questions: list[Question], n: int, where: str
) -> tuple[list[Question], str, str | None]:
    """The first ``n`` questions, how they were picked, and a note when the suite is shorter
    (then every question is asked)."""
    if n > len(questions):
        return questions, f"all {len(questions)}", shorter_note(where, len(questions), n)
    return questions[:n], f"first {n}", None


def shorter_note(where: str, has: int, n: int) -> str:
    return f"{where} has {has} questions, fewer than --n {n}: all {has} are asked"


def make_suite(
    name: str,
    version: str,
    source: str,
    questions: list[Question],
    selection: str,
    note: str | None = None,
) -> Suite:
    info = SuiteInfo(
        name=name,
        version=version,
        source=source,
        n=len(questions),
        selection=selection,
        note=note,
        questions_hash=content_hash([q.model_dump(mode="json") for q in questions]),
    )
    return Suite(info=info, questions=questions)


# MMLU-Pro's own row: its answer is both a letter and an index; its chain-of-thought and source
# are read past (they are not asked).
MMLU_PRO_FIELDS = (
    "question_id",
    "question",
    "options",
    "answer",
    "answer_index",
    "cot_content",
    "category",
    "src",
)
_OWN_FIELDS = ("id", "question", "options", "answer", "category")


def question_from_row(row: dict, no: int, strict: bool = True) -> Question:
    """A question from a row in rigbook's layout or MMLU-Pro's; ``strict`` refuses a field of
    neither (a misspelt one). A ``ValueError`` (pydantic's included) says what is wrong."""
    if strict:
        unknown = sorted(set(row) - set(MMLU_PRO_FIELDS) - set(_OWN_FIELDS))
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(unknown)}")
    options = row.get("options")
    answer, index = row.get("answer"), row.get("answer_index")
    if index is not None:
        if type(index) is not int or not isinstance(options, list):
            raise ValueError(f"answer_index {index!r} is not the index of an option")
        if not 0 <= index < min(len(options), len(LETTERS)):
            raise ValueError(f"answer_index {index} is not the index of one of the options")
        if answer is not None and answer != LETTERS[index]:
            raise ValueError(f"answer {answer!r} and answer_index {index} name different options")
        answer = LETTERS[index]
    qid = row.get("id", row.get("question_id", no))
    return Question.model_validate(
        {
            "id": str(qid),
            "question": row.get("question"),
            "options": options,
            "answer": answer,
            "category": row.get("category"),
        }
    )


def jsonl_suite(path: Path, n: int) -> Suite:
    """A JSONL file: one object per line, in rigbook's layout (question, options, and optionally
    answer, id, category) or MMLU-Pro's (question_id, question, options, answer, answer_index,
    cot_content, category, src)."""
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
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            questions.append(question_from_row(data, no))
        except ValueError as exc:  # JSONDecodeError and ValidationError are ValueErrors
            if isinstance(exc, ValidationError):
                msg = exc.errors()[0]["msg"]
            else:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise InputError(
                "E_SUITE",
                f"{path} line {no} is not a question: {msg}",
                'Each line: {"question": ..., "options": [...], "answer": "B"} (answer, id and '
                "category optional), or a row in MMLU-Pro's layout (question_id, question, "
                "options, answer, answer_index, cot_content, category, src). A dataset on the "
                "Hugging Face hub is read with --suite hf:OWNER/NAME@COMMIT.",
            ) from exc
    version = "sha256:" + hashlib.sha256(raw).hexdigest()
    picked, selection, note = first_n(questions, n, str(path))
    return make_suite(path.name, version, str(path), picked, selection, note)
