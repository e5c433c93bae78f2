"""The bench request: one run as a caller asks for it, before anything is resolved
(:mod:`rigbook.bench.plan` resolves it into the plan the runner executes)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rigbook.bench.clients import ClientChoice


class MeasureRequest(BaseModel):
    """One bench run as a caller asks for it; unset values take the profile's."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        description="Base URL of an OpenAI-compatible server (a trailing /v1 is dropped)."
    )
    model: str | None = Field(
        default=None, description="Model id; default: the first the server lists."
    )
    profile: str = "seed"
    workload: str = Field(
        default="prose",
        description="What the requests are: a workload name, or NAME@VERSION "
        "(rigbook.bench.workloads); prose is the seed's method.",
    )
    concurrency: list[int] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    requests: int | None = Field(default=None, ge=1, description="Burst mode: requests per level.")
    duration_s: float | None = Field(
        default=None, gt=0, description="Sustained mode: seconds per level."
    )
    warmup: int | None = Field(default=None, ge=0)
    stall_timeout_s: float | None = Field(default=None, gt=0)
    workers: int | None = Field(
        default=None,
        description="Processes a cell's streams run in; default: one per 256 streams, at most "
        "the usable CPUs (rigbook.bench.workers). 1 keeps every stream in this process.",
    )
    client: ClientChoice = Field(
        default="auto",
        description="Which client streams the requests: compiled (a reader thread in C with the "
        "kernel's receive stamps), python (asyncio, stamped at each read), or auto: compiled "
        "where it was built and the endpoint is plain HTTP.",
    )
    ci_target_pct: float | None = Field(
        default=None,
        gt=0,
        description="Repeat each level's cell (whole waves) until the 95 % confidence interval of "
        "its aggregate and median per-request rate is within this many percent of the mean; "
        "default: run each level once, with no interval.",
    )
    max_repeats: int | None = Field(
        default=None,
        ge=3,
        description="Cap on a level's repeats (default 10); implies a CI target.",
    )
    max_level_s: float | None = Field(
        default=None, gt=0, description="Cap on a level's seconds of repeats; implies a CI target."
    )
    recipe: str | None = Field(default=None, description="Recipe slug or file the server runs.")
    out: Path | None = Field(
        default=None, description="Result file; default RIGBOOK_HOME/results/bench-<time>.json."
    )
    telemetry: bool = Field(
        default=True, description="Read the rig and GPU telemetry when the endpoint is local."
    )
    # trace and dataset workloads (rigbook.bench.workloads.sources)
    speed: float = Field(default=1.0, gt=0, description="trace: arrival times are divided by this.")
    max_lag_ms: float = Field(
        default=50.0, gt=0, description="trace: the p99 schedule lag past which W_TRACE_LAG is due."
    )
    block_tokens: int | None = Field(
        default=None, ge=1, description="trace: tokens per shared block; default Mooncake's 512."
    )
    dataset_size: int = Field(default=64, ge=1, description="dataset: prompts sampled.")
    seed: int = Field(default=0, description="dataset: the sample's seed.")
    min_prompt_chars: int = Field(default=1, ge=1, description="dataset: shorter prompts dropped.")
    max_prompt_chars: int | None = Field(
        default=None, ge=1, description="dataset: longer prompts dropped."
    )
