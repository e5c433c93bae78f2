"""A bench result in the llm-d Benchmark Report schema, version 0.2 (llm-d/llm-d-benchmark).

llm-d's report describes one point of a sweep, so a result gives one report per cell that could be a
perf point (a concurrency level, or one repeat of it); the others (invalid, client-bound, buffered or
trace-replay cells: see :func:`rigbook.bench.assemble.makes_a_point`) are left out.
The models below are the subset of the schema rigbook fills, with the schema's field names; a field
rigbook does not know is left out, never guessed. Times are in seconds (``s``, ``s/token``) as llm-d's
own converters write them; rigbook's milliseconds are divided by 1000.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from rigbook.bench.assemble import makes_a_point
from rigbook.bench.metrics import distribution
from rigbook.bench.result import BenchResult, Cell, Distribution, RequestRecord

VERSION: Literal["0.2"] = "0.2"
# Workload kinds whose prompts are texts from a data file (llm-d: "sampled"); others say "unknown".
SAMPLED_KINDS = frozenset({"prose", "multi-turn", "shared-prefix", "dataset"})


class Schema(BaseModel):
    """llm-d's models refuse unknown fields; so do these, so a typo cannot pass as the schema."""

    model_config = ConfigDict(extra="forbid")


class Statistics(Schema):
    """A distribution in llm-d's shape: units and mean are required, percentiles optional."""

    units: Literal["count", "s", "s/token", "tokens/s"]
    mean: float
    min: float | None = None
    p10: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


class SequenceLength(Schema):
    distribution: Literal["fixed", "other"]
    value: float = Field(ge=0)
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=1)


class MultiTurn(Schema):
    enabled: bool = True


class LoadStandardized(Schema):
    tool: str
    tool_version: str
    source: Literal["sampled", "unknown"]
    stage: int = Field(ge=0, description="The cell's index in the run.")
    input_seq_len: SequenceLength
    output_seq_len: SequenceLength | None = Field(
        default=None, description="Only when replies were held to max_tokens."
    )
    multi_turn: MultiTurn | None = None
    concurrency: int = Field(ge=1)


class LoadMetadata(Schema):
    schema_version: str = "0.0.1"
    cfg_id: str | None = None
    description: str | None = None


class Native(Schema):
    """The ``native`` section: rigbook's own description, in rigbook's field names."""

    config: dict[str, object] | None = None


def native(**config: object) -> Native:
    """A native section of the values that are known (the report leaves out what is not)."""
    return Native(config={k: v for k, v in config.items() if v is not None})


class Load(Schema):
    metadata: LoadMetadata
    standardized: LoadStandardized
    native: Native


class EngineModel(Schema):
    name: str


class Parallelism(Schema):
    tp: int = 1
    dp: int = 1
    pp: int = 1
    ep: int = 1


class Accelerator(Schema):
    model: str
    count: int = Field(ge=0)
    parallelism: Parallelism


class InferenceEngine(Schema):
    """kind ``inference_engine``: only where the parallelism is known (no more than one GPU)."""

    kind: Literal["inference_engine"] = "inference_engine"
    tool: str
    tool_version: str
    role: Literal["replica"] = Field(
        default="replica", description="rigbook benches one serving endpoint."
    )
    replicas: int = 1
    model: EngineModel
    accelerator: Accelerator


class Hardware(Schema):
    model: str
    count: int = Field(ge=0)


class GenericEngine(Schema):
    """kind ``generic`` (whose extra fields llm-d does not validate): the engine on several GPUs,
    whose tensor/pipeline split a result does not record."""

    kind: Literal["generic"] = "generic"
    tool: str
    tool_version: str
    model: EngineModel
    accelerator: Hardware


class ComponentMetadata(Schema):
    schema_version: str = "0.0.1"
    label: str
    cfg_id: str = Field(description="sha256 of the standardized section, as JSON.")
    description: str | None = None


class Component(Schema):
    metadata: ComponentMetadata
    standardized: InferenceEngine | GenericEngine
    native: Native


class Scenario(Schema):
    stack: list[Component] | None = None
    load: Load | None = None


class AggregateRequests(Schema):
    total: int = Field(ge=0)
    failures: int = Field(ge=0)
    input_length: Statistics | None = None
    output_length: Statistics | None = None


class AggregateLatency(Schema):
    time_to_first_token: Statistics | None = None
    time_per_output_token: Statistics | None = Field(
        default=None, description="Per request (last token - first token) / tokens after the first."
    )
    normalized_time_per_output_token: Statistics | None = None
    request_latency: Statistics | None = None


class AggregateThroughput(Schema):
    output_token_rate: Statistics | None = None


class AggregateRequestPerformance(Schema):
    requests: AggregateRequests
    latency: AggregateLatency
    throughput: AggregateThroughput


class RequestPerformance(Schema):
    aggregate: AggregateRequestPerformance


class Results(Schema):
    request_performance: RequestPerformance


class RunTime(Schema):
    start: datetime | None = None
    end: datetime | None = None
    duration: str | None = Field(default=None, description="ISO-8601, e.g. PT42.5S.")


class Run(Schema):
    uid: str = Field(description="The result's content hash and the cell: unique per report.")
    eid: str = Field(description="The result's content hash: shared by its reports.")
    time: RunTime | None = None


class BenchmarkReport(Schema):
    """One llm-d Benchmark Report v0.2 document."""

    version: Literal["0.2"] = VERSION
    run: Run
    scenario: Scenario | None = None
    results: Results


REPORTS = TypeAdapter(list[BenchmarkReport])


def statistics(dist: Distribution, units: str, scale: float = 1.0) -> Statistics | None:
    """A rigbook distribution in llm-d's shape, each value times ``scale``; None when empty."""
    if dist.n == 0 or dist.mean is None:
        return None

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * scale

    return Statistics.model_validate(
        {
            "units": units,
            "mean": dist.mean * scale,
            **{k: scaled(getattr(dist, k)) for k in ("min", "p10", "p50", "p90", "p99", "max")},
        }
    )


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def run_time(result: BenchResult) -> RunTime | None:
    """The run's start and end (the experiment's: every cell's report carries the same)."""
    start = _moment(result.conditions.started_at)
    end = _moment(result.conditions.finished_at)
    if start is None:
        return None
    duration = None
    # Only a span both ends of which say (or both omit) their zone, and that runs forward.
    if end is not None and (end.tzinfo is None) == (start.tzinfo is None) and end >= start:
        duration = f"PT{(end - start).total_seconds():g}S"
    return RunTime(start=start, end=end, duration=duration)


def component(result: BenchResult) -> Component | None:
    """The engine and its hardware; None when the result lacks the engine, its version or the rig."""
    c = result.conditions
    if c.engine is None or c.engine_version is None or c.rig is None:
        return None
    gpus = c.rig.gpus
    names = sorted({g.name for g in gpus if g.name})
    if gpus and not names:
        return None
    # With no GPU the engine ran on the CPU: the CPU is the hardware, and there are no accelerators.
    hardware = ", ".join(names) if gpus else c.rig.cpu
    if hardware is None:
        return None
    standardized: InferenceEngine | GenericEngine
    if len(gpus) <= 1:
        standardized = InferenceEngine(
            tool=c.engine,
            tool_version=c.engine_version,
            model=EngineModel(name=c.model),
            accelerator=Accelerator(model=hardware, count=len(gpus), parallelism=Parallelism()),
        )
    else:
        standardized = GenericEngine(
            tool=c.engine,
            tool_version=c.engine_version,
            model=EngineModel(name=c.model),
            accelerator=Hardware(model=hardware, count=len(gpus)),
        )
    config = standardized.model_dump_json(exclude_none=True)
    return Component(
        metadata=ComponentMetadata(
            label=c.engine, cfg_id=hashlib.sha256(config.encode()).hexdigest()
        ),
        standardized=standardized,
        native=native(
            recipe_slug=c.recipe_slug,
            recipe_revision=c.recipe_revision,
            power_enforced_limit_w=[g.power_enforced_limit_w for g in gpus] or None,
        ),
    )


def _counted(cell: Cell) -> list[RequestRecord]:
    """The requests whose whole reply counts: completed, not cut at a window's end, not warmup."""
    return [r for r in cell.requests if r.ok and not r.warmup and not r.cut_at_window]


def prompt_lengths(cell: Cell) -> list[int]:
    """The completed requests' prompt tokens, as the server reported them."""
    return [r.prompt_tokens for r in cell.requests if r.ok and r.prompt_tokens is not None]


def input_length(cell: Cell) -> SequenceLength | None:
    """The prompts' token counts as a sequence length; None when the server reported none."""
    lengths = prompt_lengths(cell)
    if not lengths:
        return None
    lo, hi = min(lengths), max(lengths)
    if lo == hi:
        return SequenceLength(distribution="fixed", value=lo)
    return SequenceLength(distribution="other", value=sum(lengths) / len(lengths), min=lo, max=hi)


def load(result: BenchResult, cell: Cell) -> Load | None:
    """The workload of one cell; None when no prompt length is known (llm-d requires one)."""
    c = result.conditions
    prompts = input_length(cell)
    if prompts is None:
        return None
    kind = c.workload.kind if c.workload else "prose"  # results before workloads ran prose v1
    profile = c.profile
    held = profile.reply_length_held and profile.max_tokens >= 1
    return Load(
        metadata=LoadMetadata(
            cfg_id=c.workload.content_hash if c.workload else profile.content_hash,
            description=f"rigbook profile {profile.name} v{profile.version}, "
            f"workload {c.workload.key() if c.workload else profile.workload}, {cell.mode}",
        ),
        standardized=LoadStandardized(
            tool=c.bench_tool,
            tool_version=c.rigbook_version,
            source="sampled" if kind in SAMPLED_KINDS else "unknown",
            stage=cell.index,
            input_seq_len=prompts,
            output_seq_len=SequenceLength(distribution="fixed", value=profile.max_tokens)
            if held
            else None,
            multi_turn=MultiTurn() if cell.turns else None,
            concurrency=cell.concurrency,
        ),
        native=native(
            profile=profile.model_dump(mode="json"),
            workload=c.workload.model_dump(mode="json") if c.workload else None,
            mode=cell.mode,
            repeat=cell.repeat,
        ),
    )


def performance(cell: Cell) -> RequestPerformance:
    """The cell's numbers: from its metrics, and from its requests where the result carries them."""
    m = cell.metrics
    counted = _counted(cell)
    prompts = distribution(prompt_lengths(cell))
    latency = [r.done_s - r.sent_s for r in counted if r.done_s is not None]
    normalized = [
        (r.done_s - r.sent_s) / r.output_tokens
        for r in counted
        if r.done_s is not None and r.output_tokens > 0
    ]
    rate = None
    if m.aggregate_tok_s is not None:
        rate = Statistics(units="tokens/s", mean=m.aggregate_tok_s)
    return RequestPerformance(
        aggregate=AggregateRequestPerformance(
            requests=AggregateRequests(
                total=m.requests_ok + m.requests_failed,
                failures=m.requests_failed,
                input_length=statistics(prompts, "count"),
                output_length=statistics(m.output_tokens, "count"),
            ),
            latency=AggregateLatency(
                time_to_first_token=statistics(m.ttft_ms, "s", 1e-3),
                time_per_output_token=statistics(m.itl_ms, "s/token", 1e-3),
                normalized_time_per_output_token=statistics(distribution(normalized), "s/token"),
                request_latency=statistics(distribution(latency), "s"),
            ),
            throughput=AggregateThroughput(output_token_rate=rate),
        )
    )


def llmd_reports(result: BenchResult) -> list[BenchmarkReport]:
    """One llm-d Benchmark Report v0.2 per cell of ``result`` that could be a perf point, in cell order."""
    name = result.content_hash or "unhashed"
    engine = component(result)
    reports = []
    for cell in result.cells:
        if not makes_a_point(cell):
            continue
        workload = load(result, cell)
        scenario = None
        if engine is not None or workload is not None:
            scenario = Scenario(stack=[engine] if engine else None, load=workload)
        reports.append(
            BenchmarkReport(
                run=Run(uid=f"{name}/cell-{cell.index}", eid=name, time=run_time(result)),
                scenario=scenario,
                results=Results(request_performance=performance(cell)),
            )
        )
    return reports


def llmd_json(result: BenchResult) -> bytes:
    """The reports as a JSON array, fields rigbook does not fill left out (as llm-d's dump does)."""
    return REPORTS.dump_json(llmd_reports(result), exclude_none=True)
