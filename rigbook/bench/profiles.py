"""Bench profiles: versioned data, so a number always says exactly how it was measured.

A profile fixes the sampling, reply length, prompt set, concurrency levels and
request counts. Its values are hashed; a test pins each (name, version) to its
hash, so changing a value without bumping the version fails CI. Old versions
stay in the table so results that name them can still be read and repeated.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbook.errors import InputError
from rigbook.hashing import content_hash


class Profile(BaseModel):
    """How to measure: everything but the endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: int
    description: str
    temperature: float
    top_p: float
    thinking: bool = Field(
        description="Reasoning on or off; off is sent as chat_template_kwargs the engines read."
    )
    max_tokens: int = Field(ge=1)
    hold_length: bool = Field(
        description="Ask the engine to run every reply to max_tokens (ignore_eos, min_tokens) and verify it did."
    )
    prompt_set: str = Field(description="File under rigbook/bench/data/ holding the prompts.")
    workload: str
    concurrency: tuple[int, ...]
    mode: Literal["burst", "sustained"] = "burst"
    requests_per_level: int = Field(
        ge=1, description="Burst: requests per concurrency level, at least the level itself."
    )
    duration_s: float = Field(
        gt=0, description="Sustained: seconds of measurement window per level."
    )
    warmup: int = Field(
        ge=0, description="Requests sent one at a time before measuring; not counted."
    )
    stall_timeout_s: float = Field(
        gt=0, description="A stream silent this long has stalled: the request fails."
    )
    unique_prompts: bool = Field(
        default=False,
        description="Each request's prompt starts with a tag no other request of the run has, so "
        "an engine's prefix cache cannot serve one request's prompt from another's: TTFT then "
        "includes the prefill a new user's prompt costs.",
    )

    def content_hash(self) -> str:
        """Hash of every value and of the prompt texts: the one a test pins to the version."""
        # unique_prompts came after version 1: unset, it stays out, so v1's pinned hashes hold.
        values = self.model_dump(
            mode="json", exclude=None if self.unique_prompts else {"unique_prompts"}
        )
        return content_hash({**values, "prompts": self.prompts()})

    def prompts(self) -> list[str]:
        """The fixed prompt set this profile sends, in order."""
        return _prompt_set(self.prompt_set)


@cache
def _prompt_set(name: str) -> list[str]:
    return json.loads(files("rigbook.bench").joinpath("data", name).read_text(encoding="utf-8"))[
        "prompts"
    ]


# (name, version) -> profile. Never edit a shipped entry: add a new version.
_PROFILES: dict[tuple[str, int], Profile] = {
    ("seed", 1): Profile(
        name="seed",
        version=1,
        description="As the seed guide measured: temperature 0, top_p 1, thinking off, 400-token prose replies, one request vs four.",
        temperature=0.0,
        top_p=1.0,
        thinking=False,
        max_tokens=400,
        hold_length=True,
        prompt_set="prompts_prose_v1.json",
        workload="prose",
        concurrency=(1, 4),
        requests_per_level=8,
        duration_s=60.0,
        warmup=1,
        stall_timeout_s=60.0,
    ),
}
# quick v1 is seed v1 made small: the same sampling, prompts and timeouts, fewer and shorter replies.
_PROFILES[("quick", 1)] = _PROFILES[("seed", 1)].model_copy(
    update={
        "name": "quick",
        "description": "For CPUs and CI: short 48-token prose replies, few requests, concurrency 1 and 2.",
        "max_tokens": 48,
        "concurrency": (1, 2),
        "requests_per_level": 2,
        "duration_s": 10.0,
    }
)


def _with_unique_prompts(base: Profile, description: str) -> Profile:
    return base.model_copy(
        update={"version": base.version + 1, "description": description, "unique_prompts": True}
    )


# v2: unique prompts. With v1's eight fixed prompts, a batching engine's prefix cache served
# repeated prompts: llama-server's own counter evaluated 41 of 126 prompt tokens at concurrency 1.
_PROFILES[("seed", 2)] = _with_unique_prompts(
    _PROFILES[("seed", 1)],
    "As the seed guide measured: temperature 0, top_p 1, thinking off, 400-token prose replies, "
    "one request vs four; every prompt unique to its request.",
)
_PROFILES[("quick", 2)] = _with_unique_prompts(
    _PROFILES[("quick", 1)],
    "For CPUs and CI: short 48-token prose replies, few requests, concurrency 1 and 2; every "
    "prompt unique to its request.",
)

# The content class is a condition of a drafter's acceptance: the same quick cells over text an
# n-gram speculator drafts well from (rigbook.bench.speculation).
_PROFILES[("quick-repetitive", 1)] = _PROFILES[("quick", 2)].model_copy(
    update={
        "name": "quick-repetitive",
        "version": 1,
        "description": "The quick profile over deliberately repetitive text (a line to copy "
        "thirty more times): where a drafter that copies earlier text accepts most; every "
        "prompt unique to its request.",
        "prompt_set": "prompts_repetitive_v1.json",
        "workload": "repetitive",
    }
)


def list_profiles() -> list[Profile]:
    """Every shipped profile version."""
    return list(_PROFILES.values())


def get_profile(name: str, version: int | None = None) -> Profile:
    """A profile by name (latest version unless one is given)."""
    versions = sorted(v for (n, v) in _PROFILES if n == name)
    if not versions:
        known = ", ".join(sorted({n for n, _ in _PROFILES}))
        raise InputError("E_INPUT", f"no bench profile named {name!r}", f"Use one of: {known}.")
    chosen = versions[-1] if version is None else version
    if chosen not in versions:
        raise InputError(
            "E_INPUT", f"profile {name!r} has no version {version}", f"Versions: {versions}."
        )
    return _PROFILES[(name, chosen)]
