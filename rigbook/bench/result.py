"""The bench result: what was measured, under which conditions, with a content hash.

A result is the one document other parts of rigbook read (compare, hub): its
``conditions`` say where and how it was measured, ``cells`` hold every
(concurrency, mode) measurement with each request, ``perf_points`` restate the
valid cells in the recipe record's shape, and ``content_hash`` covers the
canonical JSON of everything else, so an edited file is detected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigbook import hashing
from rigbook.bench.intervals import Interval
from rigbook.bench.workloads.model import WorkloadRef
from rigbook.bench.workloads.trace import TraceReplay
from rigbook.findings import Finding
from rigbook.hashing import content_hash
from rigbook.recipe.schema import PerfPoint
from rigbook.result_file import ResultFile, edited, invalid, read_file
from rigbook.rig.model import RigSummary

BENCH_KIND: Final = "rigbook.bench.result"

RESULT_SCHEMA_VERSION = 1

TokenSource = Literal["server_continuous", "server_final", "client_length", "client_fallback"]


class Model(BaseModel):
    """Base of the result models: extra fields are refused so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")


class Distribution(Model):
    """Summary of a list of numbers; every field is null when the list is empty."""

    n: int = 0
    mean: float | None = None
    min: float | None = None
    p10: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


class RequestRecord(Model):
    """One request as the client saw it. Times are seconds on the client's monotonic clock,
    relative to the start of its cell; rates are tokens per second."""

    cell: int = Field(description="Index of the cell this request belongs to.")
    index: int = Field(description="Order in which the request was sent within its cell.")
    prompt_index: int
    warmup: bool = False
    sent_s: float
    first_token_s: float | None = Field(
        default=None, description="First streamed token of any kind (reasoning or content)."
    )
    first_content_s: float | None = Field(
        default=None, description="First content token (after any reasoning)."
    )
    last_token_s: float | None = None
    done_s: float | None = Field(
        default=None, description="Stream closed (or was cut at the window edge)."
    )
    prompt_tokens: int | None = None
    output_tokens: int = Field(
        default=0, description="Reasoning plus content tokens, as counted by token_source."
    )
    reasoning_tokens: int = 0
    first_chunk_tokens: float = Field(
        default=0.0,
        description="Tokens the first token-bearing chunk carried (fractional when only the final usage is known).",
    )
    chunks: int = Field(default=0, description="Token-bearing chunks received.")
    token_source: TokenSource
    finish_reason: str | None = None
    ok: bool
    error: str | None = Field(
        default=None, description="Why the request failed: error kind and detail."
    )
    cut_at_window: bool = Field(
        default=False, description="Sustained mode: stream still running at the window's end."
    )
    decode_tok_s: float | None = Field(
        default=None,
        description="(output_tokens - first_chunk_tokens) / (last_token_s - first_token_s).",
    )
    itl_ms_mean: float | None = Field(
        default=None, description="1000 / decode_tok_s: mean time per token after the first chunk."
    )
    itl_ms: Distribution = Field(
        default_factory=Distribution,
        description="Per-token gaps: each chunk gap divided by the tokens it carried.",
    )
    window_tokens: float | None = Field(
        default=None, description="Sustained mode: tokens that arrived inside the window."
    )
    draft_tokens: int | None = Field(
        default=None,
        description="Tokens a speculator drafted for this request, as the response's own "
        "timings say (llama-server's draft_n); null where the response says nothing.",
    )
    accepted_draft_tokens: int | None = Field(
        default=None, description="Of those, the tokens the target accepted (draft_n_accepted)."
    )
    user: int | None = Field(
        default=None, description="Session workloads: the user (0, 1, …) who sent it."
    )
    turn: int | None = Field(
        default=None, description="Session workloads: the user's turn, 1 for their first."
    )
    cached_prompt_tokens: int | None = Field(
        default=None,
        description="Prompt tokens the engine served from its prefix cache, as its response said "
        "(usage.prompt_tokens_details.cached_tokens, or llama-server's timings.cache_n).",
    )


class WorkerLoad(Model):
    """One worker process's share of a cell streamed by several (``rigbook bench --workers N``)."""

    worker: int = Field(description="The worker's number in the run's pool, from 0.")
    pid: int | None = None
    streams: int = Field(description="Streams (lanes) it kept in flight.")
    requests: int = Field(default=0, description="Requests of the cell it sent that ended.")
    tokens: int = Field(default=0, description="Tokens of its completed (or window-cut) requests.")
    cpu_s: float | None = Field(
        default=None, description="Its CPU time (user + system) in the cell."
    )
    cpu_fraction: float | None = Field(default=None, description="cpu_s / its wall time.")
    cpu_us_per_token: float | None = Field(
        default=None, description="Its CPU µs per token: 10⁶ ÷ this is one process's ceiling."
    )
    stall_worst_bound_ms: float | None = None
    died: str | None = Field(
        default=None, description="Why it ended before reporting (its in-flight requests failed)."
    )


class ClientMoved(Model):
    """How far the client's measured lag could have moved each of a cell's figures, as a share of
    the figure (0.01: 1 %); null where the cell has no such figure; 100 where nothing bounds it (a
    lag as long as the replies' own span)."""

    aggregate_tok_s: float | None = None
    per_request_decode_tok_s: float | None = Field(
        default=None, description="Its median (itl_ms, its inverse, moves as much)."
    )
    ttft_ms: float | None = Field(
        default=None, description="Its median (ttfct_ms and prefill_tok_s follow it)."
    )
    itl_ms_worst_p99: float | None = None


class ClientLoad(Model):
    """How hard the client itself worked during a cell, to tell a slow client from a slow server."""

    loop_lag_ms: Distribution = Field(
        description="How late the client woke when it meant to: the stall ticker (1-5 ms period) on "
        "the Python client's event loop, or the compiled reader's thread after each paced wait."
    )
    loop_lag_worst_ms: float | None = Field(
        default=None,
        description="Its latest wake: with the Python client, a lower bound of the longest stall.",
    )
    timestamps: Literal["kernel"] | None = Field(
        default=None,
        description="'kernel': each event carries the kernel's receive stamp (the compiled reader), "
        "so a late read moves no timestamp; absent: each event is stamped when the client read it.",
    )
    merged_read_worst_ms: float | None = Field(
        default=None,
        description="Kernel stamps only: the longest time over which a read that held several "
        "events of one stream may have received the earlier ones. They carry the stamp of the "
        "read's last byte, so no timestamp moved further than this.",
    )
    first_read_worst_ms: float | None = Field(
        default=None,
        description="Kernel stamps only: as merged_read_worst_ms, for the reads that brought a "
        "stream's first token with later bytes: no TTFT moved further than this.",
    )
    last_read_worst_ms: float | None = Field(
        default=None,
        description="Kernel stamps only: as merged_read_worst_ms, for the reads that held a "
        "stream's last token with later bytes (the read that ends a stream left out): no "
        "stream's end of tokens, on which its rate ends, moved further than this.",
    )
    end_late_worst_ms: float | None = Field(
        default=None,
        description="Kernel stamps only: the longest the event loop took to take a stream's end "
        "from the reader (information: a lane's next request shows such a delay in "
        "next_request_late_worst_ms, and an end time is the reader's).",
    )
    next_request_late_worst_ms: float | None = Field(
        default=None,
        description="Kernel stamps only: the longest a lane's next request went out after its "
        "previous stream ended, less the connect's handshake as the kernel measured it (a "
        "handshake it had to send twice is excused whole): how late the client turned a lane over.",
    )
    unstamped_reads: int | None = Field(
        default=None,
        description="Kernel stamps only: reads whose data came without the kernel's receive stamp "
        "(a kernel that takes SO_TIMESTAMPNS and sends none); their events carry when the reader "
        "woke, which nothing bounds, so any makes the cell client_bound.",
    )
    stall_worst_bound_ms: float | None = Field(
        default=None,
        description="The longest interval between two of the ticker's wakes while a stream was "
        "open: no client stall was longer. The ticker's period is a quarter of the stall limit "
        "(1 to 5 ms).",
    )
    worst_stall_cpu_ms: float | None = Field(
        default=None,
        description="CPU time the client used during its longest interval (worst stall): near 0, the machine "
        "did not schedule it; near the stall, the client itself was busy.",
    )
    read_gap_worst_ms: float | None = Field(
        default=None,
        description="Longest time with streams open and no read by the client (server pauses show here too).",
    )
    stall_limit_ms: float | None = Field(
        default=None, description="Longest stall tolerated: a share of the median inter-token gap."
    )
    cpu_s: float = Field(description="Process CPU time (user + system) spent during the cell.")
    wall_s: float
    cpu_fraction: float = Field(
        description="cpu_s / wall_s: near 1.0 means the client saturated one core."
    )
    cpu_us_per_token: float | None = Field(
        default=None,
        description="cpu_s over all processes per token: the cost of a token in one process.",
    )
    client_bound: bool = Field(
        description="The client could have moved the aggregate or the per-request rate by more "
        "than the tolerance: the cell gives no perf point."
    )
    moved: ClientMoved | None = Field(
        default=None, description="Per figure, how far the client could have moved it."
    )
    marked: list[str] = Field(
        default_factory=list,
        description="The figures whose bound in moved exceeds the tolerance (1 %): not to be "
        "believed; the others hold.",
    )
    reason: str | None = None
    workers: int | None = Field(
        default=None,
        description="Processes the streams ran in; null: the bench process itself. With several, "
        "cpu_s is their sum, cpu_fraction the busiest one's, the stall and lag figures the worst "
        "any had.",
    )
    per_worker: list[WorkerLoad] = Field(
        default_factory=list, description="Each worker process's figures, when workers is set."
    )
    parent_cpu_s: float | None = Field(
        default=None,
        description="With workers: CPU the bench process itself spent in the cell (receiving and "
        "recording requests, journal thread included); not in cpu_s.",
    )


class GpuCellTelemetry(Model):
    """One GPU during one cell. ``power_limit_w`` is that card's enforced limit, never a sum."""

    index: int
    name: str | None = None
    power_limit_w: float | None = None
    samples: int = 0
    power_draw_w: Distribution = Field(default_factory=Distribution)
    sm_clock_mhz: Distribution = Field(default_factory=Distribution)
    mem_clock_mhz: Distribution = Field(default_factory=Distribution)
    temperature_c: Distribution = Field(default_factory=Distribution)
    throttle_reasons: list[str] = Field(
        default_factory=list, description="Every throttle reason seen in any sample."
    )
    energy_j: float | None = Field(
        default=None, description="Energy counter difference across the cell's window."
    )


class CellTelemetry(Model):
    """Telemetry of one cell: per card and the total over cards, kept apart by name."""

    available: bool
    reason: str | None = Field(default=None, description="Why telemetry is unavailable.")
    window_s: float | None = None
    gpus: list[GpuCellTelemetry] = Field(default_factory=list)
    power_limit_w_per_gpu: list[float | None] = Field(default_factory=list)
    power_draw_w_total_mean: float | None = Field(
        default=None, description="Sum over cards of each card's mean draw."
    )
    energy_j_total: float | None = None
    energy_j_per_token: float | None = None
    tok_s_per_w: float | None = Field(
        default=None, description="Aggregate tok/s / power_draw_w_total_mean."
    )


class CellMetrics(Model):
    """The numbers of one cell, over its completed measured requests."""

    per_request_decode_tok_s: Distribution
    aggregate_tok_s: float | None = Field(
        description="Output tokens in the window / window length."
    )
    ttft_ms: Distribution = Field(description="Time to the first token of any kind.")
    ttfct_ms: Distribution = Field(
        description="Time to the first content token (differs from ttft when there is reasoning)."
    )
    itl_ms: Distribution = Field(description="Per-request mean inter-token latency.")
    itl_ms_worst_p99: float | None = Field(
        default=None, description="Largest per-request p99 per-token gap."
    )
    prefill_tok_s: Distribution = Field(description="Prompt tokens / TTFT, per request.")
    output_tokens: Distribution
    concurrency_reached: int = Field(description="Most requests in flight at once.")
    requests_ok: int
    requests_failed: int
    window_s: float | None = None
    tokens_in_window: int = 0


class ServerCounts(Model):
    """The engine's own Prometheus counters over one cell, beside the client's figures."""

    engine: str = Field(description="Whose counter names were read: vllm, sglang or llama.cpp.")
    generation_tokens: float = Field(
        description="Generated tokens the engine counted during the cell."
    )
    prompt_tokens: float | None = Field(
        default=None,
        description="Prompt tokens the engine counted (llama-server leaves out cached ones).",
    )
    client_tokens: int = Field(description="Output tokens the client counted in the same cell.")
    client_prompt_tokens: int | None = None
    difference: float | None = Field(
        default=None, description="(client - server) / server, generated tokens."
    )
    judged: bool = Field(
        description="False where the two differ by design (a sustained window cuts streams)."
    )
    mismatch: bool = Field(
        description="Judged and differing by more than 1 %: the cell carries W_SERVER_COUNT."
    )
    ttft_requests: float | None = Field(
        default=None, description="Requests in the engine's TTFT histogram."
    )
    ttft_ms_mean: float | None = Field(
        default=None, description="The engine's own mean TTFT over the cell."
    )
    ttft_ms_p50: float | None = Field(
        default=None, description="Its median, interpolated in the histogram's buckets."
    )


class RequestAcceptance(Model):
    """Drafted and accepted tokens as each response reported them (llama-server's final
    ``timings``: ``draft_n``, ``draft_n_accepted``), beside the engine's counters."""

    requests: int = Field(description="Responses that reported drafted tokens.")
    draft_tokens: int = Field(description="Their drafted tokens, summed.")
    accepted_tokens: int = Field(description="Their accepted tokens, summed.")
    acceptance_rate: Distribution = Field(
        default_factory=Distribution,
        description="Each response's accepted / drafted tokens (responses that drafted some).",
    )
    matches_counters: bool | None = Field(
        default=None,
        description="The sums equal the /metrics counters' over the cell; null where the cell has "
        "no counters or a request did not finish (a cut stream reports nothing).",
    )


class Speculation(Model):
    """A cell's speculative decoding, from the engine's own counters (rigbook.bench.speculation)."""

    engine: str = Field(description="Whose counter names were read: llama.cpp or vllm.")
    drafts: float | None = Field(
        default=None, description="Target verification steps that carried a draft."
    )
    draft_tokens: float = Field(description="Tokens the drafter proposed during the cell.")
    accepted_tokens: float = Field(description="Drafted tokens the target accepted.")
    acceptance_rate: float | None = Field(
        default=None, description="accepted_tokens / draft_tokens; null when nothing was drafted."
    )
    mean_acceptance_length: float | None = Field(
        default=None,
        description="Tokens per verification step, 1 + accepted_tokens / drafts (the target's "
        "own token included); null when no step carried a draft.",
    )
    accepted_per_position: list[float] = Field(
        default_factory=list,
        description="Accepted tokens at each draft position (0 first), where the engine counts them.",
    )
    per_request: RequestAcceptance | None = Field(
        default=None,
        description="What the responses themselves reported, where the engine sends it "
        "(llama-server); without /metrics counters the cell's figures are these sums.",
    )


class TurnStats(Model):
    """A session workload's requests of one turn number within a cell (every user's turn N)."""

    turn: int = Field(description="1 for each user's first turn.")
    requests: int = Field(description="Completed requests of this turn.")
    ttft_ms: Distribution
    prompt_tokens: Distribution
    cached_prompt_tokens: Distribution = Field(
        description="As the engine's responses said; empty where they said nothing."
    )
    ttft_ms_per_prompt_token: float | None = Field(
        default=None,
        description="Median over requests of TTFT / prompt tokens: what a prompt token cost to "
        "first token, lower where the cache served it.",
    )
    per_request_decode_tok_s: Distribution


class PrefixCache(Model):
    """How much of a cell's prompts the engine served from its prefix cache, by its own readings,
    cross-checked against what the workload sent."""

    responses: int = Field(description="Completed requests that said how many tokens were cached.")
    requests: int = Field(description="Completed requests of the cell.")
    prompt_tokens: int | None = Field(
        default=None, description="Their prompt tokens, summed (the responses that said both)."
    )
    cached_prompt_tokens: int | None = Field(
        default=None, description="Their cached prompt tokens, summed."
    )
    hit_rate: float | None = Field(
        default=None, description="cached_prompt_tokens / prompt_tokens."
    )
    engine_queries: float | None = Field(
        default=None,
        description="vLLM: prompt tokens its prefix cache was asked for over the cell "
        "(vllm:prefix_cache_queries in /metrics).",
    )
    engine_hits: float | None = Field(
        default=None, description="vLLM: of those, the tokens it served (vllm:prefix_cache_hits)."
    )
    engine_hit_rate: float | None = Field(default=None, description="engine_hits / engine_queries.")
    cold_requests: int = Field(
        default=0,
        description="Requests that nothing sent before could share beyond the chat template's "
        "opening (each session's first turn, where its prompt starts with its own tag).",
    )
    cold_cached_max: int | None = Field(
        default=None, description="The most cached tokens any cold request's response said."
    )
    contradictions: list[str] = Field(
        default_factory=list,
        description="Where the readings contradict the workload (W_PREFIX_CACHE_CHECK).",
    )


class Cell(Model):
    """One measurement: a concurrency level in one mode."""

    index: int
    mode: Literal["burst", "sustained"]
    concurrency: int
    requests_planned: int | None = None
    duration_s: float | None = None
    token_count_source: TokenSource | None = Field(
        default=None, description="The weakest source any request in the cell used."
    )
    valid: bool
    invalid_reasons: list[str] = Field(default_factory=list)
    client_bound: bool = False
    cut_short: bool = False
    metrics: CellMetrics
    client: ClientLoad | None = None
    telemetry: CellTelemetry
    server: ServerCounts | None = Field(
        default=None, description="The engine's own counters, where it has them."
    )
    speculation: Speculation | None = Field(
        default=None,
        description="Drafted and accepted tokens over the cell, where the engine counts them.",
    )
    requests: list[RequestRecord] = Field(default_factory=list)
    repeat: int | None = Field(
        default=None,
        description="Which repeat of its level this cell is (0, 1, …) when the run repeats cells "
        "for an interval; None when each level ran once.",
    )
    workload: str | None = Field(
        default=None,
        description="The workload the cell ran, as 'name vN (hash)'; absent in results written "
        "before workloads (prose v1).",
    )
    turns: list[TurnStats] = Field(
        default_factory=list, description="Session workloads: the figures of each turn number."
    )
    prefix_cache: PrefixCache | None = Field(
        default=None, description="Session workloads: the engine's prefix-cache readings."
    )
    trace: TraceReplay | None = Field(
        default=None,
        description="Trace workloads: what the replay sent and how late (schedule lag).",
    )


class LevelInterval(Model):
    """The 95 % confidence intervals of one concurrency level's rates, over its repeated cells."""

    concurrency: int
    repeats: int = Field(
        description="Cells the level ran; the intervals use the valid ones that were not client-bound."
    )
    aggregate_tok_s: Interval | None = Field(
        default=None, description="Over each valid cell's aggregate tok/s."
    )
    per_request_decode_tok_s_median: Interval | None = Field(
        default=None, description="Over each valid cell's median per-request decode rate."
    )
    target_pct: float = Field(description="The half-width asked for, percent of the mean.")
    met: bool = Field(description="Both intervals are within the target.")
    stopped_by: Literal["target", "repeats", "time", "signal", "invalid"] = Field(
        description="What ended the repeats: the target met, the cap on repeats or on seconds, "
        "a stop signal, or a cell with failed requests."
    )


class ProfileRef(Model):
    """The profile a run used: its name, version, content hash and the values it applied."""

    name: str
    version: int
    content_hash: str
    max_tokens: int
    temperature: float
    top_p: float
    thinking: bool
    reply_length_held: bool = Field(
        description="Replies were asked to run to max_tokens (ignore_eos/min_tokens) and checked."
    )
    workload: str
    overrides: dict[str, float | int | str | list[int]] = Field(
        default_factory=dict,
        description="Profile values the command line changed (the profile's own are otherwise applied).",
    )


class Conditions(Model):
    """Everything a number needs beside it to be compared or published."""

    url: str
    model: str
    engine: str | None = None
    engine_version: str | None = None
    recipe_slug: str | None = None
    recipe_revision: int | None = None
    rig: RigSummary | None = None
    rig_unavailable: str | None = Field(default=None, description="Why no rig summary was taken.")
    profile: ProfileRef
    workload: WorkloadRef | None = Field(
        default=None,
        description="What the requests were (rigbook.bench.workloads); absent in results "
        "written before workloads, which ran prose v1.",
    )
    mode: Literal["burst", "sustained"]
    bench_tool: str = "rigbook"
    rigbook_version: str
    started_at: str
    finished_at: str | None = None
    cut_short: bool = False


class GpuRunTelemetry(Model):
    """One GPU over the whole run."""

    index: int
    name: str | None = None
    power_limit_w: float | None = None
    energy_j: float | None = None


class RunTelemetry(Model):
    """Telemetry over all cells: per card and total."""

    available: bool
    reason: str | None = None
    source: str | None = Field(default=None, description="'nvml', or the replay it came from.")
    gpus: list[GpuRunTelemetry] = Field(default_factory=list)
    power_limit_w_per_gpu: list[float | None] = Field(default_factory=list)
    energy_j_total: float | None = None


class BenchResult(Model):
    """A bench run: conditions, cells, perf points, telemetry and the content hash."""

    schema_version: int = RESULT_SCHEMA_VERSION
    kind: Literal["rigbook.bench.result"] = BENCH_KIND
    conditions: Conditions
    cells: list[Cell]
    perf_points: list[PerfPoint]
    telemetry: RunTelemetry
    warnings: list[Finding] = Field(
        default_factory=list,
        description="Coded warnings (W_CLIENT_BOUND, W_CUT_SHORT, …) with their remedies; "
        "results written before they were records hold 'CODE: message' strings, read as records.",
    )
    journal: str | None = Field(
        default=None, description="File name of the request journal beside the result."
    )
    warmup: list[RequestRecord] = Field(
        default_factory=list, description="Warmup requests (cell -1), kept when none succeeded."
    )
    intervals: list[LevelInterval] = Field(
        default_factory=list,
        description="Per level, the 95 % confidence intervals over repeated cells (runs with a CI target).",
    )
    content_hash: str | None = None

    def hashed_body(self) -> dict:
        """The JSON the hash is taken over: everything but ``content_hash``. Fields added after
        results were first published are left out while empty, so older files keep their hash."""
        body = self.model_dump(mode="json", by_alias=True, exclude_none=False)
        body.pop("content_hash", None)
        return _without_empty_later_fields(body)

    def with_hash(self) -> BenchResult:
        """A copy with ``content_hash`` set."""
        return self.model_copy(update={"content_hash": content_hash(self.hashed_body())})


# Fields added after the first results were published; see BenchResult.hashed_body.
LATER_FIELDS = frozenset(
    {
        "warmup",
        "loop_lag_worst_ms",
        "stall_worst_bound_ms",
        "read_gap_worst_ms",
        "stall_limit_ms",
        "worst_stall_cpu_ms",
        "server",
        "rate_definition",
        "slo",
        "slo_profile",
        "users_at_slo",
        "users_at_slo_lower_bound",
        "slo_binding",
        "quality",
        "workers",
        "per_worker",
        "parent_cpu_s",
        "timestamps",
        "merged_read_worst_ms",
        "end_late_worst_ms",
        "next_request_late_worst_ms",
        "unstamped_reads",
        "repeat",
        "intervals",
        "first_read_worst_ms",
        "last_read_worst_ms",
        "moved",
        "marked",
        "speculation",
        "speculative_acceptance_length",
        "per_request",
        "draft_tokens",
        "accepted_draft_tokens",
        "workload",
        "user",
        "turn",
        "cached_prompt_tokens",
        "turns",
        "prefix_cache",
        "trace",
    }
)


def _without_empty_later_fields(value):
    if isinstance(value, dict):
        return {
            k: _without_empty_later_fields(v)
            for k, v in value.items()
            if not (k in LATER_FIELDS and v in (None, [], {}))
        }
    if isinstance(value, list):
        return [_without_empty_later_fields(v) for v in value]
    return value


def verify_hash(result: BenchResult) -> bool:
    """True when ``content_hash`` matches the result's content."""
    return result.content_hash is not None and result.content_hash == content_hash(
        result.hashed_body()
    )


def hash_as_written(raw: dict) -> str:
    """The content hash of a result's JSON as it was written (or posted), later fields left out
    while empty as :meth:`BenchResult.hashed_body` does. Read from the file's own JSON, not from a
    model re-built from it: a field a later version adds with a default that is not empty would
    otherwise change the hash of every older file."""
    return hashing.hash_as_written(raw, _without_empty_later_fields)


def hash_matches(raw: object) -> bool:
    """True when ``raw`` (a bench result's JSON) carries the hash of its own content."""
    return hashing.carries_own_hash(raw, _without_empty_later_fields)


def save_result(result: BenchResult, path: Path | str) -> Path:
    """Write the result (hash set) as indented JSON; the file is replaced atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    hashed = result if verify_hash(result) else result.with_hash()
    tmp = path.with_name(path.name + ".tmp")
    # pydantic's own encoder: json.dumps with an indent runs in pure Python.
    tmp.write_text(hashed.model_dump_json(indent=2, by_alias=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load_result(path: Path | str, *, check_hash: bool = True) -> BenchResult:
    """Read a bench result file; a malformed file or a wrong hash raises ``E_RESULT_INVALID``."""
    return bench_from(read_file(path), check_hash=check_hash)


def bench_from(file: ResultFile, *, check_hash: bool = True) -> BenchResult:
    """The bench result ``file`` holds (hash checked on its JSON as written)."""
    try:
        result = BenchResult.model_validate(file.data)
    except ValidationError as exc:
        raise invalid(file, "a bench result", exc) from None
    if check_hash and not hash_matches(file.data):
        raise edited(file)
    return result
