"""The documents `needle` and `agree` write: conditions, every probe or question, a summary,
quality points in the recipe record's perf-point shape, and a content hash.

A run rewrites its file after every probe or question (atomically), with ``complete`` false
until the last one, so a crash or Ctrl-C leaves a valid result of what was measured.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigbook.hashing import content_hash
from rigbook.quality.haystack import Fault
from rigbook.quality.server import Served
from rigbook.quality.suites import SuiteInfo
from rigbook.recipe.schema import PerfPoint
from rigbook.result_file import ResultFile, edited, invalid, read_file

NEEDLE_KIND: Final = "rigbook.quality.needle"
AGREE_KIND: Final = "rigbook.quality.agree"


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Sampling(Model):
    """Greedy decoding as sent: temperature 0, top_p 1, a fixed seed, the reply cap."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    max_tokens: int


class Machine(Model):
    """The client machine's load while the run went (1-minute load average), for timings."""

    load_start: float
    load_end: float | None = None
    cpus: int


def machine_now() -> Machine:
    """The load average now and the CPU count."""
    return Machine(load_start=round(os.getloadavg()[0], 2), cpus=os.cpu_count() or 0)


class RunInfo(Model):
    """Who ran it, when, with which rigbook."""

    rigbook_version: str
    started_at: str
    finished_at: str | None = None
    machine: Machine


def run_info() -> RunInfo:
    """A fresh RunInfo stamped now."""
    from rigbook import __version__

    return RunInfo(
        rigbook_version=__version__,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        machine=machine_now(),
    )


class Endpoint(Served):
    """A measured endpoint and the recipe it was said to run."""

    model_config = ConfigDict(extra="forbid")
    recipe: str | None = None


class Fact(Model):
    key: str
    value: str
    found: bool = Field(
        description="The reply gives this code under this vault's name, and no other code there."
    )
    in_reply: bool = Field(
        default=False, description="The code appears in the reply (under any name, or none)."
    )


class Decoy(Model):
    """A fact of the same shape about a vault the question does not name."""

    key: str
    value: str


class NeedleProbe(Model):
    """One request: a haystack of ``context`` tokens with facts at ``depth``, asked once."""

    context: int = Field(description="The context length this probe fills.")
    depth: float
    cache: Literal["cold", "warm"] = Field(
        description="cold: the prompt starts with a fresh salt, so no cached prefix could help; "
        "warm: the same prompt sent again right after."
    )
    salt: str = Field(description="The random line the prompt opens with (not from the seed).")
    facts: list[Fact]
    decoys: list[Decoy] = Field(default_factory=list)
    passed: bool = Field(
        description="Every fact found under its vault, no fault, no error, prompt not truncated."
    )
    faults: list[Fault] = Field(
        default_factory=list,
        description="Why the reply fails: missed (a code absent), unbound (a code not under its "
        "vault), decoy (a decoy's code named), many_codes (more codes than facts asked), echo "
        "(the reply repeats the prompt).",
    )
    prompt_tokens: int | None = Field(default=None, description="As the server's usage counted it.")
    prompt_tokens_source: str = Field(default="stream usage", description="Which usage counted it.")
    message_tokens: int | None = Field(
        default=None, description="The user message, by the server's tokenizer."
    )
    expected_prompt_tokens: int | None = Field(
        default=None,
        description="The fewest prompt tokens the server could count for the message sent: its "
        "tokenizer's count, or the calibration's estimate less a margin.",
    )
    truncated: bool | None = Field(
        default=None,
        description="The server counted fewer prompt tokens than expected: it cut the prompt, "
        "so the probe says nothing about retrieval. Null: the server reported no count.",
    )
    ttft_ms: float | None = None
    prefill_tok_s: float | None = Field(default=None, description="prompt_tokens / TTFT.")
    reply: str = ""
    finish_reason: str | None = None
    error: str | None = None


class NeedleConditions(Model):
    endpoint: Endpoint
    served_context: int | None
    served_context_source: str | None
    contexts: list[int]
    depths: list[float]
    facts: int
    seed: int
    haystack: str = Field(description="Haystack generator and prompt layout version.")
    token_count_source: str = Field(
        description="How the haystack was sized: the server tokenizer's "
        "endpoint, or the usage of a calibration request."
    )
    sampling: Sampling
    run: RunInfo


class NeedleResult(Model):
    kind: Literal["rigbook.quality.needle"] = NEEDLE_KIND
    conditions: NeedleConditions
    probes: list[NeedleProbe] = Field(default_factory=list)
    complete: bool = False
    quality_points: list[PerfPoint] = Field(default_factory=list)
    content_hash: str | None = None


class Answer(Model):
    reply: str = ""
    letter: str | None = Field(
        default=None, description="Extracted by the strict rule; null: no answer."
    )
    correct: bool | None = Field(
        default=None, description="Null when the question has no gold answer."
    )
    error: str | None = None


class QuestionOutcome(Model):
    id: str
    gold: str | None
    a: Answer
    b: Answer

    @property
    def failed(self) -> bool:
        """A request failed on either side: the question counts for neither side."""
        return self.a.error is not None or self.b.error is not None


class AgreeSummary(Model):
    """Over the questions both sides answered without a request failure."""

    asked: int
    failed: int = Field(description="Questions left out because a request failed on either side.")
    counted: int
    a_correct: int | None = None
    b_correct: int | None = None
    a_accuracy_pct: float | None = None
    b_accuracy_pct: float | None = None
    a_no_answer: int
    b_no_answer: int
    agree: int = Field(description="Both extracted the same letter, or both gave no answer.")
    agreement_pct: float | None = None
    only_a_correct: int | None = Field(default=None, description="McNemar's b.")
    only_b_correct: int | None = Field(default=None, description="McNemar's c.")
    mcnemar_p: float | None = Field(
        default=None, description="Exact two-sided; null without gold answers."
    )
    differing: list[str] = Field(
        default_factory=list, description="Ids of questions answered differently."
    )


class AgreeConditions(Model):
    a: Endpoint
    b: Endpoint
    suite: SuiteInfo
    prompt: str = Field(description="Prompt layout version.")
    extraction: str = Field(description="Answer extraction rule version (docs/quality.md).")
    sampling: Sampling
    run: RunInfo


class AgreeResult(Model):
    kind: Literal["rigbook.quality.agree"] = AGREE_KIND
    conditions: AgreeConditions
    questions: list[QuestionOutcome] = Field(default_factory=list)
    summary: AgreeSummary | None = None
    complete: bool = False
    quality_points: list[PerfPoint] = Field(default_factory=list)
    content_hash: str | None = None


QualityResult = NeedleResult | AgreeResult


def _body(result: QualityResult) -> dict:
    body = result.model_dump(mode="json", exclude_none=False)
    body.pop("content_hash", None)
    return body


def save(result: QualityResult, path: Path) -> Path:
    """Write the result with its hash; the file is replaced atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    hashed = result.model_copy(update={"content_hash": content_hash(_body(result))})
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        json.dumps(hashed.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    tmp.replace(path)
    return path


def load(path: Path | str) -> QualityResult:
    """Read a needle or agree result; a malformed file or a wrong hash is E_RESULT_INVALID."""
    return quality_from(read_file(path))


def hash_matches(result: QualityResult) -> bool:
    """True when ``result`` carries the hash of its own content."""
    return result.content_hash == content_hash(_body(result))


def quality_from(file: ResultFile) -> QualityResult:
    """The needle or agree result ``file`` holds (by its ``kind``), hash checked."""
    model = NeedleResult if file.kind == NEEDLE_KIND else AgreeResult
    try:
        result = model.model_validate(file.data)
    except ValidationError as exc:
        raise invalid(file, "a needle or agree result", exc) from None
    if not hash_matches(result):
        raise edited(file)
    return result
