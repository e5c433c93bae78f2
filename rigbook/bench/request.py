"""The bench request: one run as a caller asks for it, before anything is resolved
(:mod:`rigbook.bench.plan` resolves it into the plan the runner executes).

A field that the command line sets carries a :class:`Flag` in its metadata. The field's
description is the flag's help and its default the flag's default, so adding a bench option is one
field here (``rigbook.cli.bench_options`` makes the typer options from these fields).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.clients import ClientChoice
from rigbook.errors import InputError


# A dataclass, not a pydantic model: pydantic reads a model instance in Annotated metadata as a
# schema of its own, and a dataclass instance it leaves alone.
@dataclass(frozen=True)
class Flag:
    """How the command line sets a field: its flag, and what its help says when unset."""

    name: str
    unset: str = ""
    """Put before the help's final stop where the command's default is None: what leaving the
    option out means (``" (default: the profile's)"``)."""
    min: float | None = None
    """The flag's floor where the field's bound is open (``gt``); else the field's ``ge``."""
    parse: Callable[[str], Any] | None = None
    """For a field the command line takes as text: the text to the field's value."""


def _not_levels(what: str) -> InputError:
    return InputError(
        "E_INPUT",
        f"{what} is not a list of positive integers",
        "Write e.g. --concurrency 1,4,8.",
    )


def parse_levels(text: str | None) -> list[int] | None:
    """``--concurrency 1,4,8`` as levels, or ``E_INPUT``."""
    if text is None:
        return None
    try:
        levels = [int(x) for x in text.split(",")]
    except ValueError:
        raise _not_levels(f"--concurrency {text!r}") from None
    return check_levels(levels)


def check_levels(levels: list[int]) -> list[int]:
    """The levels, or ``E_INPUT`` for an empty list, a level below 1 or above the cap."""
    from rigbook.bench.scheduler import MAX_CONCURRENCY

    if not levels or any(c < 1 for c in levels):
        raise _not_levels(f"concurrency {levels!r}")
    if max(levels) > MAX_CONCURRENCY:
        raise InputError(
            "E_INPUT",
            f"concurrency {max(levels)} is more streams than a bench holds "
            f"(at most {MAX_CONCURRENCY})",
            "Use fewer; `make bench-client` shows where this machine's client "
            "becomes the bottleneck.",
        )
    return levels


#: What ``--workload`` takes in every command; each command says what it names and adds its own.
WORKLOAD_FORMS = (
    "prose (default, the seed's method), multi-turn, shared-prefix or unique-prefix; NAME@VERSION "
    "for an older version; dataset:FILE or dataset:hf:OWNER/NAME@COMMIT:PATH sends a "
    "ShareGPT-layout dataset's prompts"
)
_PROFILES = " (default: the profile's)"
_IMPLIES = "; implies --ci-target 2 when it is not given"
_TRACE = "--workload trace:FILE: "
_DATASET = "--workload dataset:…: "


class MeasureRequest(BaseModel):
    """One bench run as a caller asks for it; unset values take the profile's."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        description="Base URL of an OpenAI-compatible server (a trailing /v1 is dropped)."
    )
    model: Annotated[
        str | None,
        Field(description="Model id."),
        Flag("--model", unset=" (default: the first the server lists)"),
    ] = None
    profile: Annotated[
        str, Field(description="Bench profile: seed (default) or quick."), Flag("--profile")
    ] = "seed"
    workload: Annotated[
        str,
        Field(
            description=f"What the requests are: {WORKLOAD_FORMS}; trace:FILE replays a request trace."
        ),
        Flag("--workload"),
    ] = "prose"
    concurrency: Annotated[
        list[int] | None,
        Field(description="Concurrency levels, e.g. 1,4,8."),
        Flag("--concurrency", unset=_PROFILES, parse=parse_levels),
    ] = None
    max_tokens: Annotated[
        int | None, Field(ge=1, description="Reply length."), Flag("--max-tokens", unset=_PROFILES)
    ] = None
    requests: Annotated[
        int | None,
        Field(ge=1, description="Burst mode: requests per level, in each repeat of it."),
        Flag("--requests", unset=_PROFILES),
    ] = None
    duration_s: Annotated[
        float | None,
        Field(gt=0, description="Sustained mode: seconds per level."),
        Flag("--duration", min=0.1),
    ] = None
    warmup: Annotated[
        int | None,
        Field(ge=0, description="Warmup requests before measuring."),
        Flag("--warmup", unset=_PROFILES),
    ] = None
    stall_timeout_s: Annotated[
        float | None,
        Field(gt=0, description="Seconds of silence that fail a request."),
        Flag("--stall-timeout", unset=_PROFILES, min=0.1),
    ] = None
    workers: Annotated[
        int | None,
        Field(description="Processes each cell's streams run in."),
        Flag(
            "--workers",
            unset=" (default: one per 256 streams, at most the usable CPUs; 1: all in this process)",
        ),
    ] = None
    client: Annotated[
        ClientChoice,
        Field(
            description="Which client streams the requests: compiled (C reader, kernel "
            "timestamps), python, or auto (compiled where built and the URL is http)."
        ),
        Flag("--client"),
    ] = "auto"
    ci_target_pct: Annotated[
        float | None,
        Field(
            gt=0,
            description="Repeat each level (whole waves) until the 95 % confidence interval of "
            "its aggregate and median per-request rate is within this many percent, e.g. 2.",
        ),
        Flag("--ci-target", unset=" (default: each level once, no interval)", min=0.01),
    ] = None
    max_repeats: Annotated[
        int | None,
        Field(ge=3, description="Cap on a level's repeats."),
        Flag("--max-repeats", unset=" (default 10)" + _IMPLIES),
    ] = None
    max_level_s: Annotated[
        float | None,
        Field(gt=0, description="Cap on a level's seconds of repeats."),
        Flag("--max-level-seconds", unset=_IMPLIES, min=0.1),
    ] = None
    recipe: Annotated[
        str | None,
        Field(description="Recipe slug (or file) the server runs; recorded with the result."),
        Flag("--recipe"),
    ] = None
    out: Annotated[
        Path | None,
        Field(description="Result file."),
        Flag("--out", unset=" (default: RIGBOOK_HOME/results/bench-<time>.json)"),
    ] = None
    telemetry: bool = Field(
        default=True, description="Read the rig and GPU telemetry when the endpoint is local."
    )
    # trace and dataset workloads (rigbook.bench.workloads.sources)
    speed: Annotated[
        float,
        Field(
            gt=0,
            description=f"{_TRACE}replay this many times faster than the trace (0.5: half as fast).",
        ),
        Flag("--speed", min=0.001),
    ] = 1.0
    max_lag_ms: Annotated[
        float,
        Field(
            gt=0,
            description=f"{_TRACE}the p99 schedule lag past which the cell is flagged W_TRACE_LAG.",
        ),
        Flag("--max-lag-ms", min=0.001),
    ] = 50.0
    block_tokens: Annotated[
        int | None,
        Field(ge=1, description=f"{_TRACE}tokens per shared block (hash_ids)."),
        Flag("--block-tokens", unset=" (default: 512, Mooncake's)"),
    ] = None
    dataset_size: Annotated[
        int, Field(ge=1, description=f"{_DATASET}prompts sampled."), Flag("--dataset-size")
    ] = 64
    seed: Annotated[int, Field(description=f"{_DATASET}the sample's seed."), Flag("--seed")] = 0
    min_prompt_chars: Annotated[
        int,
        Field(ge=1, description=f"{_DATASET}shorter prompts dropped."),
        Flag("--min-prompt-chars"),
    ] = 1
    max_prompt_chars: Annotated[
        int | None,
        Field(ge=1, description=f"{_DATASET}longer prompts dropped."),
        Flag("--max-prompt-chars"),
    ] = None
