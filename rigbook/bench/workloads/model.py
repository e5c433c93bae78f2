"""Workloads: versioned data that say how a bench's prompts are made, shared and timed.

A profile fixes the sampling, reply length and concurrency levels; a workload fixes what the
requests are. ``prose`` is the seed's method (independent prompts from the profile's prompt set,
in bursts or at a sustained rate). ``multi-turn`` holds conversations: each user of a cell sends
``turns`` messages, each carrying the conversation so far (the engine's previous replies
included), with ``think_time_s`` between them. ``shared-prefix`` puts a reference document of
``prefix_words`` words before a short question, shared by all users or by groups of them.

Like a profile, a workload's values (and the texts it draws from) are hashed, a test pins each
(name, version) to its hash, and results name the workload they ran; ``compare`` refuses to
compare results of different workloads.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbook.errors import InputError
from rigbook.hashing import content_hash

WorkloadKind = Literal["prose", "multi-turn", "shared-prefix", "trace", "dataset"]


class Workload(BaseModel):
    """What the requests of a bench are: how prompts are made, shared and timed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: int = Field(ge=1)
    kind: WorkloadKind
    description: str
    turns: int = Field(
        default=1,
        ge=1,
        description="Requests each user sends in a cell; multi-turn: each carries the "
        "conversation so far.",
    )
    think_time_s: float = Field(
        default=0.0, ge=0, description="Pause between a user's reply and their next message."
    )
    prefix_words: int = Field(
        default=0,
        ge=0,
        description="Words of the reference document sent before each user message (a system "
        "message); 0: none.",
    )
    prefix_groups: int = Field(
        default=1,
        ge=0,
        description="Users share the document of group user mod prefix_groups; 0: every user "
        "has a document of their own (the same words after a tag of their own).",
    )
    text_set: str | None = Field(
        default=None, description="File under rigbook/bench/data/ the messages are drawn from."
    )
    # trace and dataset workloads are made from a user's file (rigbook.bench.workloads.sources)
    source: str | None = Field(
        default=None, description="trace/dataset: the file, or hf:OWNER/NAME@COMMIT:PATH."
    )
    source_sha256: str | None = Field(default=None, description="sha256 of the file's bytes.")
    selection: str | None = Field(
        default=None,
        description="trace: the replay speed; dataset: the length filters, sample and seed.",
    )

    @property
    def sessions(self) -> bool:
        """Whether requests are sent by users holding sessions (multi-turn, shared-prefix)."""
        return self.kind in ("multi-turn", "shared-prefix")

    def content_hash(self) -> str:
        """Hash of every value and of the texts it draws from: the one a test pins. Values at
        their defaults stay out, so a field added later leaves the shipped hashes as they are."""
        values = self.model_dump(mode="json", exclude_defaults=True)
        texts = workload_texts(self.text_set) if self.text_set else None
        return content_hash({**values, "texts": texts})

    def ref(self) -> WorkloadRef:
        """The workload as a result names it."""
        return WorkloadRef(
            name=self.name, version=self.version, kind=self.kind, content_hash=self.content_hash()
        )


class WorkloadRef(BaseModel):
    """The workload a run used: name, version, kind and content hash."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: int
    kind: str
    content_hash: str

    def key(self) -> str:
        """'name vN (hash12)': what two results must share to be compared."""
        return f"{self.name} v{self.version} ({self.content_hash.removeprefix('sha256:')[:12]})"


@cache
def workload_texts(name: str) -> dict[str, list[str]]:
    """The lists of texts in a workload's data file (openers, follow_ups, document, questions)."""
    raw = json.loads(files("rigbook.bench").joinpath("data", name).read_text(encoding="utf-8"))
    return {k: v for k, v in raw.items() if isinstance(v, list)}


# (name, version) -> workload. Never edit a shipped entry: add a new version.
_WORKLOADS: dict[tuple[str, int], Workload] = {
    ("prose", 1): Workload(
        name="prose",
        version=1,
        kind="prose",
        description="As the seed measured: independent prompts from the profile's prompt set, "
        "replies held to the profile's length, in bursts or at a sustained rate.",
    ),
    ("multi-turn", 1): Workload(
        name="multi-turn",
        version=1,
        kind="multi-turn",
        description="Each user of a cell holds a conversation of 4 turns, 1 s of think time "
        "apart; each turn sends the whole conversation so far (the engine's replies included) "
        "plus a new message.",
        turns=4,
        think_time_s=1.0,
        text_set="workloads_chat_v1.json",
    ),
    ("shared-prefix", 1): Workload(
        name="shared-prefix",
        version=1,
        kind="shared-prefix",
        description="A reference document of 600 words shared by every user, then a short "
        "question of the user's own; 2 questions per user, 0.5 s apart.",
        turns=2,
        think_time_s=0.5,
        prefix_words=600,
        prefix_groups=1,
        text_set="workloads_chat_v1.json",
    ),
    ("unique-prefix", 1): Workload(
        name="unique-prefix",
        version=1,
        kind="shared-prefix",
        description="As shared-prefix v1, but every user's document starts with a tag of their "
        "own, so no user's prompt shares the document with another's: the baseline that shows "
        "what sharing saves.",
        turns=2,
        think_time_s=0.5,
        prefix_words=600,
        prefix_groups=0,
        text_set="workloads_chat_v1.json",
    ),
}

DEFAULT_WORKLOAD = ("prose", 1)


def default_workload() -> Workload:
    """The workload of a run that names none (and of results written before workloads)."""
    return _WORKLOADS[DEFAULT_WORKLOAD]


def workload_of(named: WorkloadRef | None) -> WorkloadRef:
    """The workload a result names, or prose v1 for a result written before workloads."""
    return named if named is not None else default_workload().ref()


def list_workloads() -> list[Workload]:
    """Every shipped workload version."""
    return list(_WORKLOADS.values())


def get_workload(name: str, version: int | None = None) -> Workload:
    """A workload by name (latest version unless one is given); ``NAME@VERSION`` names a version."""
    if version is None and "@" in name:
        name, _, text = name.partition("@")
        if not text.isdigit():
            raise InputError(
                "E_INPUT",
                f"workload version {text!r} is not a number",
                "Write NAME or NAME@VERSION, e.g. multi-turn@1.",
            )
        version = int(text)
    versions = sorted(v for (n, v) in _WORKLOADS if n == name)
    if not versions:
        known = ", ".join(sorted({n for n, _ in _WORKLOADS}))
        raise InputError("E_INPUT", f"no bench workload named {name!r}", f"Use one of: {known}.")
    chosen = versions[-1] if version is None else version
    if chosen not in versions:
        raise InputError(
            "E_INPUT", f"workload {name!r} has no version {version}", f"Versions: {versions}."
        )
    return _WORKLOADS[(name, chosen)]
