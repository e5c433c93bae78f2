"""The one registry of codes: every finding and every error rigbook reports.

Each code has a severity (``error`` blocks a launch or fails a command,
``warning`` does not, ``info``), the stage that raises it, what it means and
what to do. ``docs/codes.md`` lists this table in full; a test keeps the two
in step.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Severity(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


class Code(StrEnum):
    """Every code rigbook reports. A misspelt ``Code.E_…`` fails at import; a misspelt string
    fails where an error or finding is made (and a test checks every literal in the repo)."""

    E_RECIPE_INVALID = "E_RECIPE_INVALID"
    E_RECIPE_NOT_FOUND = "E_RECIPE_NOT_FOUND"
    E_FETCH = "E_FETCH"
    E_HF_AUTH = "E_HF_AUTH"
    E_INPUT = "E_INPUT"
    E_GPU_COUNT = "E_GPU_COUNT"
    E_GPU_MODEL = "E_GPU_MODEL"
    W_GPU_VARIANT = "W_GPU_VARIANT"
    E_GPU_MEMORY = "E_GPU_MEMORY"
    E_P2P = "E_P2P"
    W_P2P_TEST = "W_P2P_TEST"
    W_POWER = "W_POWER"
    W_TOPOLOGY = "W_TOPOLOGY"
    E_DRIVER = "E_DRIVER"
    E_DOCKER = "E_DOCKER"
    E_TOOLKIT = "E_TOOLKIT"
    E_TOOL = "E_TOOL"
    E_DISK = "E_DISK"
    E_PORT = "E_PORT"
    W_GPU_BUSY = "W_GPU_BUSY"
    W_WEDGED = "W_WEDGED"
    W_LICENSE = "W_LICENSE"
    I_NO_GPU = "I_NO_GPU"
    W_SANDBOX = "W_SANDBOX"
    E_UNSAFE = "E_UNSAFE"
    E_ENGINE_EXIT = "E_ENGINE_EXIT"
    E_NOT_READY = "E_NOT_READY"
    E_LOCKED = "E_LOCKED"
    E_ENGINE_MISSING = "E_ENGINE_MISSING"
    E_NOT_RUNNING = "E_NOT_RUNNING"
    E_CONFIRM = "E_CONFIRM"
    E_MODEL_PATH = "E_MODEL_PATH"
    E_MODEL_ARCH = "E_MODEL_ARCH"
    E_KV_CACHE = "E_KV_CACHE"
    E_HOST_MEMORY = "E_HOST_MEMORY"
    I_DOCKER_JUDGE = "I_DOCKER_JUDGE"
    I_HAND_JUDGE = "I_HAND_JUDGE"
    E_DOCKER_IMAGE = "E_DOCKER_IMAGE"
    E_DOCKER_DENIED = "E_DOCKER_DENIED"
    E_CONNECT = "E_CONNECT"
    E_HTTP = "E_HTTP"
    E_MODEL_ID = "E_MODEL_ID"
    E_EMPTY_REPLY = "E_EMPTY_REPLY"
    E_BENCH_INVALID = "E_BENCH_INVALID"
    E_BENCH_CLIENT = "E_BENCH_CLIENT"
    E_ENGINE_ERROR = "E_ENGINE_ERROR"
    W_CLIENT_BOUND = "W_CLIENT_BOUND"
    W_SERVER_COUNT = "W_SERVER_COUNT"
    W_CUT_SHORT = "W_CUT_SHORT"
    E_RESULT_INVALID = "E_RESULT_INVALID"
    E_STREAM_FORMAT = "E_STREAM_FORMAT"
    W_STREAM_BUFFERED = "W_STREAM_BUFFERED"
    W_SPEC_NO_ACCEPTANCE = "W_SPEC_NO_ACCEPTANCE"
    E_WORKLOAD_MISMATCH = "E_WORKLOAD_MISMATCH"
    W_PREFIX_CACHE_NONE = "W_PREFIX_CACHE_NONE"
    W_PREFIX_CACHE_CHECK = "W_PREFIX_CACHE_CHECK"
    E_TRACE = "E_TRACE"
    W_TRACE_LAG = "W_TRACE_LAG"
    E_TRACE_PROMPT = "E_TRACE_PROMPT"
    E_DATASET = "E_DATASET"
    E_SLO_INVALID = "E_SLO_INVALID"
    W_CAPACITY_LOWER_BOUND = "W_CAPACITY_LOWER_BOUND"
    W_CAPACITY_UNSTABLE = "W_CAPACITY_UNSTABLE"
    W_CAPACITY_FEW_REQUESTS = "W_CAPACITY_FEW_REQUESTS"
    W_CAPACITY_UNPROBED = "W_CAPACITY_UNPROBED"
    W_CAPACITY_NOT_IDLE = "W_CAPACITY_NOT_IDLE"
    E_WARMUP_STALLED = "E_WARMUP_STALLED"
    E_CONTEXT = "E_CONTEXT"
    E_SUITE = "E_SUITE"
    E_PROMPT_TRUNCATED = "E_PROMPT_TRUNCATED"
    E_NOT_COMPARABLE = "E_NOT_COMPARABLE"
    E_AUTH = "E_AUTH"
    E_RATE_LIMIT = "E_RATE_LIMIT"
    E_TOO_LARGE = "E_TOO_LARGE"
    E_RESULT_REFUSED = "E_RESULT_REFUSED"
    E_METHOD = "E_METHOD"
    E_DB = "E_DB"
    E_HUB_SERVER = "E_HUB_SERVER"
    E_RESULT_REPLAYED = "E_RESULT_REPLAYED"
    E_SIGNATURE = "E_SIGNATURE"
    E_KEY_REVOKED = "E_KEY_REVOKED"
    E_REPRODUCTION_REFUSED = "E_REPRODUCTION_REFUSED"
    E_DISK_FULL = "E_DISK_FULL"
    E_FILE = "E_FILE"
    E_INTERNAL = "E_INTERNAL"


class CodeInfo(BaseModel):
    """A code's registry entry. ``raises`` names the class of :mod:`rigbook.errors` an error with
    this code is (the class a caller catches); warnings and infos are findings, never raised."""

    model_config = ConfigDict(frozen=True)

    code: Code
    severity: Severity
    raises: str | None
    stage: str
    meaning: str
    remedy: str


def _c(
    code: Code, severity: str, raises: str | None, stage: str, meaning: str, remedy: str
) -> CodeInfo:
    return CodeInfo(
        code=code,
        severity=Severity(severity),
        raises=raises,
        stage=stage,
        meaning=meaning,
        remedy=remedy,
    )


_ALL = [
    # recipe: reading and validating recipes
    _c(
        Code.E_RECIPE_INVALID,
        "error",
        "RecipeInvalid",
        "recipe",
        "The recipe does not match the schema.",
        "Fix each field listed by its path; `rigbook recipe schema` prints the full schema.",
    ),
    _c(
        Code.E_RECIPE_NOT_FOUND,
        "error",
        "InputError",
        "recipe",
        "No catalog slug, file or URL by that name.",
        "Run `rigbook recipes list` for the catalog, or give a path to a .json file or an http(s) URL.",
    ),
    _c(
        Code.E_FETCH,
        "error",
        "FetchError",
        "recipe",
        "A file or URL could not be read.",
        "Check the path or URL, the network and the permissions, then retry.",
    ),
    _c(
        Code.E_HF_AUTH,
        "error",
        "LaunchError",
        "launch",
        "The Hugging Face hub refused the download: the "
        "model is gated or private and no token (or a token without access) was sent.",
        "Accept the model's terms on its Hugging Face page, then log in with `hf auth login` (or set HF_TOKEN) "
        "and run again.",
    ),
    _c(
        Code.E_INPUT,
        "error",
        "InputError",
        "cli",
        "An option or argument is not valid.",
        "See `rigbook COMMAND --help` for the accepted values.",
    ),
    # rig probe and preflight check
    _c(
        Code.E_GPU_COUNT,
        "error",
        "EnvironmentProblem",
        "check",
        "Fewer GPUs are available than the recipe needs.",
        "Use a machine with enough GPUs, free GPUs with `--gpus`, or pick a recipe for your GPU count.",
    ),
    _c(
        Code.E_GPU_MODEL,
        "error",
        "EnvironmentProblem",
        "check",
        "The GPUs are not the card the recipe was made for.",
        "Pick a recipe for your card; numbers and memory fit are only known for the recipe's card.",
    ),
    _c(
        Code.W_GPU_VARIANT,
        "warning",
        None,
        "check",
        "The GPU is a sibling variant of the recipe's card (e.g. Max-Q vs Workstation).",
        "Expect different power envelopes and speeds; record the variant with any numbers you publish.",
    ),
    _c(
        Code.E_GPU_MEMORY,
        "error",
        "EnvironmentProblem",
        "check",
        "Too little free GPU memory for the recipe.",
        "Stop other GPU work (the processes holding memory are listed) and verify the free MiB per GPU.",
    ),
    _c(
        Code.E_P2P,
        "error",
        "EnvironmentProblem",
        "check",
        "CUDA peer access is missing between GPUs the recipe runs tensor-parallel.",
        "Check the NVIDIA driver, the PCIe topology (`nvidia-smi topo -m`), ACS on PCIe switches and the IOMMU setting (iommu=pt or off).",
    ),
    _c(
        Code.W_P2P_TEST,
        "warning",
        None,
        "check",
        "The functional peer-access copy test was skipped or could not run.",
        "Install PyTorch or CuPy with CUDA to run the copy test; NVML's P2P status alone was used.",
    ),
    _c(
        Code.W_POWER,
        "warning",
        None,
        "check",
        "The enforced GPU power limit differs from the per-card power the recipe's numbers were measured at, or is below the card's default.",
        "Set it with `sudo nvidia-smi -i N -pl WATTS` to match, or record your limit with any comparison.",
    ),
    _c(
        Code.W_TOPOLOGY,
        "warning",
        None,
        "check",
        "Tensor-parallel GPUs are connected across host bridges or NUMA nodes.",
        "Prefer GPUs under one PCIe switch or host bridge (`nvidia-smi topo -m`); expect slower all-reduce.",
    ),
    _c(
        Code.E_DRIVER,
        "error",
        "EnvironmentProblem",
        "check",
        "The NVIDIA driver or its CUDA version is below the recipe's floor, or no driver is loaded.",
        "Install a driver at or above the floor the recipe names.",
    ),
    _c(
        Code.E_DOCKER,
        "error",
        "EnvironmentProblem",
        "check",
        "The recipe runs in Docker and no working Docker engine was found.",
        "Install Docker Engine and make sure `docker info` works for your user.",
    ),
    _c(
        Code.E_TOOLKIT,
        "error",
        "EnvironmentProblem",
        "check",
        "Docker has no NVIDIA runtime or CDI devices (NVIDIA Container Toolkit).",
        "Install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`, then restart Docker.",
    ),
    _c(
        Code.E_TOOL,
        "error",
        "EnvironmentProblem",
        "check",
        "A host tool the recipe needs is missing.",
        "Install the tool with your package manager.",
    ),
    _c(
        Code.E_DISK,
        "error",
        "EnvironmentProblem",
        "check",
        "The weights are larger than the free space where models are stored.",
        "Free disk space or point `--models-dir` at a larger disk.",
    ),
    _c(
        Code.E_PORT,
        "error",
        "EnvironmentProblem",
        "check",
        "The port the engine would listen on is already taken.",
        "Stop what holds the port or choose another with `--port`.",
    ),
    _c(
        Code.W_GPU_BUSY,
        "warning",
        None,
        "check",
        "A GPU the recipe would use is already running compute processes.",
        "Stop the listed processes for clean numbers, or choose other GPUs with `--gpus`.",
    ),
    _c(
        Code.W_WEDGED,
        "warning",
        None,
        "check",
        "A GPU is fully busy but no process owns it (a wedged or leaked context).",
        "Find the stuck job (`nvidia-smi`, `fuser -v /dev/nvidia*`); reset the GPU if nothing holds it.",
    ),
    _c(
        Code.W_LICENSE,
        "warning",
        None,
        "check",
        "A part of the recipe (weights, drafter, engine) is under a non-commercial license.",
        "Check the terms fit your use; the message names the alternative the recipe offers.",
    ),
    _c(
        Code.I_NO_GPU,
        "info",
        None,
        "rig",
        "No NVIDIA GPU or driver was found on this machine.",
        "Only CPU recipes (the embedded default) can run here.",
    ),
    _c(
        Code.W_SANDBOX,
        "warning",
        None,
        "check",
        "The recipe starts a native engine (llama.cpp, vLLM, SGLang, a script) and this machine "
        "cannot run it in rigbook's sandbox: bubblewrap is missing or cannot make namespaces.",
        "Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`); or, if you trust the "
        "recipe, run it unconfined with `--allow no-sandbox`.",
    ),
    # launch
    _c(
        Code.E_UNSAFE,
        "error",
        "LaunchError",
        "launch",
        "The recipe asks for an option, variable or mount that rigbook does not allow.",
        "Read it; if you trust it, allow it by name with `--allow NAME` (an engine option its "
        "table does not list: `--allow-option OPT`); some nothing lets through.",
    ),
    _c(
        Code.E_ENGINE_EXIT,
        "error",
        "LaunchError",
        "launch",
        "The engine process exited before it became ready.",
        "Read the engine's first error line (shown) and its log (`rigbook logs NAME`).",
    ),
    _c(
        Code.E_NOT_READY,
        "error",
        "LaunchError",
        "launch",
        "The engine did not become ready before the timeout.",
        "Check `rigbook logs NAME`; large models may need a longer `--timeout`.",
    ),
    _c(
        Code.E_LOCKED,
        "error",
        "LaunchError",
        "launch",
        "The GPUs (or CPU slot) are already held by another rigbook launch.",
        "Stop that launch with `rigbook down NAME`, or pick other GPUs with `--gpus`.",
    ),
    _c(
        Code.E_ENGINE_MISSING,
        "error",
        "LaunchError",
        "launch",
        "The engine's program or package is not installed.",
        "Install the engine the recipe names (for the embedded default: `make setup`).",
    ),
    _c(
        Code.E_NOT_RUNNING,
        "error",
        "LaunchError",
        "launch",
        "No rigbook launch by that name is running.",
        "See `rigbook status` for what runs.",
    ),
    _c(
        Code.E_CONFIRM,
        "error",
        "InputError",
        "launch",
        "The launch (or an overwrite) was not confirmed: no yes at the prompt, or a file that differs is in the way.",
        "Answer yes at the prompt, or pass `--yes` in scripts; move the file that is in the way.",
    ),
    _c(
        Code.E_MODEL_PATH,
        "error",
        "LaunchError",
        "launch",
        "The engine was given a model folder that does not exist.",
        "Check `--models-dir` and the recipe's model path (an engine takes a missing folder for a hub "
        "repository id). For the vLLM CPU recipe, `make setup-vllm` derives the folder into VLLM_MODELS_DIR "
        "(default RIGBOOK_HOME/models).",
    ),
    _c(
        Code.E_MODEL_ARCH,
        "error",
        "LaunchError",
        "launch",
        "The engine does not support the model's architecture.",
        "Check `architectures` in the model folder's config.json; use an engine version that supports it, "
        "or a model it supports.",
    ),
    _c(
        Code.E_KV_CACHE,
        "error",
        "LaunchError",
        "launch",
        "The engine's KV cache cannot hold one request of the context length asked for.",
        "Give the KV cache more memory (VLLM_CPU_KVCACHE_SPACE in GiB on a CPU, --gpu-memory-utilization on a "
        "GPU) or lower --max-model-len to what the log says fits.",
    ),
    _c(
        Code.E_HOST_MEMORY,
        "error",
        "LaunchError",
        "launch",
        "Not enough free host memory (RAM) for what the engine was asked to reserve.",
        "Lower the memory the recipe reserves (VLLM_CPU_KVCACHE_SPACE, in GiB, for vLLM on a CPU) or stop "
        "other processes; `free -g` shows what is available.",
    ),
    _c(
        Code.I_DOCKER_JUDGE,
        "info",
        None,
        "launch",
        "Docker judged the docker recipe's safety: rigbook created the container with "
        "`docker create --pull never` (nothing started), read `docker inspect` and removed it "
        "and any volume it made.",
        "Nothing to do; each refusal names what docker would have given the container.",
    ),
    _c(
        Code.I_HAND_JUDGE,
        "info",
        None,
        "launch",
        "Docker could not judge the docker recipe (no docker client or daemon, the image not "
        "present locally, docker would not create the container, or a dry run), so rigbook's own "
        "reading of the `docker run` options decided.",
        "To have docker judge it, start the daemon and have the image locally (`docker pull "
        "IMAGE`), then run `rigbook check` or `rigbook plan` again.",
    ),
    _c(
        Code.E_DOCKER_IMAGE,
        "error",
        "LaunchError",
        "launch",
        "The container image is not on this machine and docker did not pull it (`--pull never`, "
        "no registry reachable, or no such image there).",
        "Pull it (`docker pull IMAGE`) where a registry is reachable, or build the local one "
        "(`make docker-image` for rigbook/llama-server-cpu:local); `docker images` lists what is here.",
    ),
    _c(
        Code.E_DOCKER_DENIED,
        "error",
        "EnvironmentProblem",
        "check",
        "Docker's socket refused this user (permission denied).",
        "Run as a user docker lets in (the `docker` group is root-equivalent: give it only to whom "
        "you would give root), or use rootless docker or podman and point DOCKER_HOST at its socket.",
    ),
    # endpoint: smoke test and bench client
    _c(
        Code.E_CONNECT,
        "error",
        "EndpointError",
        "endpoint",
        "The endpoint refused the connection or timed out.",
        "Check that the server runs and listens on that host and port (`rigbook status`).",
    ),
    _c(
        Code.E_HTTP,
        "error",
        "EndpointError",
        "endpoint",
        "The endpoint answered with an HTTP error.",
        "Read the status and body shown; check the URL path and the request options.",
    ),
    _c(
        Code.E_MODEL_ID,
        "error",
        "EndpointError",
        "endpoint",
        "The endpoint does not serve the requested model id.",
        "Use one of the model ids the endpoint lists (shown), or omit `--model`.",
    ),
    _c(
        Code.E_EMPTY_REPLY,
        "error",
        "EndpointError",
        "endpoint",
        "The endpoint answered with an empty reply.",
        "Check the engine log; the model may be misconfigured or out of context.",
    ),
    # bench
    _c(
        Code.E_BENCH_INVALID,
        "error",
        "EndpointError",
        "bench",
        "A bench cell had failed requests and is not valid.",
        "Read each failure reason in the result; fix the server or the profile and run again.",
    ),
    _c(
        Code.E_BENCH_CLIENT,
        "error",
        "InputError",
        "bench",
        "The compiled bench client was asked for but cannot stream this run: it was not built "
        "into this install (no C compiler at setup, or not Linux), the endpoint is https, or "
        "this kernel gives no receive stamps (SO_TIMESTAMPNS), which are its timestamps.",
        "Run `make setup` where a C compiler is present, or pass `--client auto` (the compiled "
        "client where it can, else Python) or `--client python`.",
    ),
    _c(
        Code.E_ENGINE_ERROR,
        "error",
        "EndpointError",
        "bench",
        "The endpoint accepted every warmup request but failed it mid-stream (in-band error, dropped or stalled "
        "stream, or no tokens), so nothing was measured.",
        "Read the failures kept in the result's `warmup` list and the engine log; fix the engine and run again.",
    ),
    _c(
        Code.W_CLIENT_BOUND,
        "warning",
        None,
        "bench",
        "The client's measured lag could have moved a published figure of a cell (its aggregate, its per-request rate or its TTFT) by more than 1 %: the Python client's loop stalled, or the compiled client read a token together with later bytes of its stream or sent a lane's next request late. A marked rate keeps the cell out of perf points; a marked TTFT only leaves the point's ttft_ms out.",
        "Run the client on a less loaded machine, lower the concurrency or spread it with --workers; the cell's client.marked lists the figures and its reason says by how much and why.",
    ),
    _c(
        Code.W_SERVER_COUNT,
        "warning",
        None,
        "bench",
        "The engine's own token counter (Prometheus /metrics) differs from the client's count by more than 1 % "
        "in a cell.",
        "Make sure nothing else sends requests to the server during a bench; if it persists, the client lost "
        "tokens: compare the cell's `server` and `client` figures and report it.",
    ),
    _c(
        Code.W_CUT_SHORT,
        "warning",
        None,
        "bench",
        "The run (a bench, or a capacity search) was stopped before it finished; the result holds what "
        "was measured.",
        "Run again to complete the missing cells; a capacity answer cut short is a lower bound.",
    ),
    _c(
        Code.E_RESULT_INVALID,
        "error",
        "InputError",
        "bench",
        "A result file (bench, capacity, needle or agree) cannot be read, is not JSON, declares "
        "no result kind, is malformed, or its hash does not check out.",
        "Give the file rigbook wrote (it prints the path when a run ends), unmodified: a bench, "
        "capacity, needle or agree result.",
    ),
    _c(
        Code.E_STREAM_FORMAT,
        "error",
        "EndpointError",
        "bench",
        "Every warmup request was answered 200 with a reply that is no event stream the bench can "
        "time: compressed (Content-Encoding), or not text/event-stream (the server ignored "
        "stream: true and sent one JSON answer). Nothing was measured.",
        "Serve the stream uncompressed and as text/event-stream (a proxy in between: turn its "
        "compression and buffering off for text/event-stream), or bench the engine directly.",
    ),
    _c(
        Code.W_STREAM_BUFFERED,
        "warning",
        None,
        "bench",
        "Replies in a cell came in one piece (at least three token events within 1 ms, and within "
        "1 % of their time to first token): something held the stream back, so their TTFT is the "
        "whole reply and they have no per-request rate.",
        "Bench the engine directly, or turn off buffering in the proxy in front of it (nginx: "
        "proxy_buffering off, or the X-Accel-Buffering: no header).",
    ),
    _c(
        Code.W_SPEC_NO_ACCEPTANCE,
        "warning",
        None,
        "bench",
        "The recipe runs a speculator (speculative decoding), but the engine's /metrics gave no "
        "drafted or accepted tokens for a cell: its tok/s cannot be told apart from how much of "
        "the draft the target accepted on these prompts.",
        "Serve /metrics with the engine's speculative counters (llama-server: --metrics; vLLM: "
        "its default /metrics), then bench again; docs/bench.md lists the counters read.",
    ),
    _c(
        Code.E_WORKLOAD_MISMATCH,
        "error",
        "InputError",
        "compare",
        "The bench results given to compare ran different workloads (name, version or content "
        "hash differ): their requests were different work, so no ratio of their numbers means "
        "anything.",
        "Bench each endpoint with the same --workload and compare those results; each source's "
        "workload is listed.",
    ),
    _c(
        Code.W_PREFIX_CACHE_NONE,
        "warning",
        None,
        "bench",
        "A session workload (multi-turn, shared-prefix) ran, but the engine gave no prefix-cache "
        "reading for a cell: no cached prompt tokens per response and no prefix-cache counters "
        "in /metrics, so the cell's TTFT cannot be told apart from how much of its prompts the "
        "engine served from cache.",
        "Serve the counters (llama-server reports cached tokens in every response; vLLM: its "
        "default /metrics, or --enable-prompt-tokens-details), then bench again; docs/bench.md "
        "lists the readings taken.",
    ),
    _c(
        Code.W_PREFIX_CACHE_CHECK,
        "warning",
        None,
        "bench",
        "The engine's prefix-cache reading contradicts what the workload sent: a cold turn (a "
        "session's first, with nothing shared before it) was served from cache beyond the chat "
        "template's opening, or more prompt tokens were cached than the prompt held.",
        "Make sure nothing else sends requests to the server during the bench; if it persists, "
        "the engine's counter is wrong: report it with the cell's turns and prefix_cache figures.",
    ),
    # bench: trace replay and dataset prompts
    _c(
        Code.E_TRACE,
        "error",
        "InputError",
        "bench",
        "A trace file cannot be replayed: a row is not JSON or CSV, or misses or misstates its "
        "arrival time, input or output length, or lists more shared blocks than its input holds. "
        "The message names the line.",
        "Fix or drop that row; docs/bench.md lists the trace layouts (Mooncake JSONL, plain CSV "
        "or JSONL) and their fields.",
    ),
    _c(
        Code.W_TRACE_LAG,
        "warning",
        None,
        "bench",
        "In a trace replay, requests went out later than the trace planned them: the schedule "
        "lag's p99 is past the stated limit, so the server saw a gentler arrival pattern than "
        "the trace's.",
        "Replay at a lower --speed, on a less loaded client machine, or raise --max-lag-ms if "
        "that lag does not matter to the question asked.",
    ),
    _c(
        Code.E_TRACE_PROMPT,
        "error",
        "EndpointError",
        "bench",
        "A trace replay could not make prompts of the trace's exact input lengths: the server has "
        "no tokenizer route (/tokenize) or its tokenizer does not count the filler text as "
        "expected.",
        "Serve with the engine's tokenizer route (llama-server and vLLM have /tokenize), or "
        "bench that server with a profile's prompts instead of a trace.",
    ),
    _c(
        Code.E_DATASET,
        "error",
        "InputError",
        "bench",
        "A prompt dataset cannot be used: the file is not ShareGPT-layout JSON Lines (a "
        "conversations list with a human turn), the hub spec is not pinned to a commit, the "
        "file cannot be fetched, or no conversation passes the length filters.",
        "Give a ShareGPT JSONL file or hf:OWNER/NAME@<40-hex commit>:PATH, and loosen "
        "--min-prompt-chars/--max-prompt-chars if every row was filtered out.",
    ),
    # capacity
    _c(
        Code.E_SLO_INVALID,
        "error",
        "InputError",
        "capacity",
        "The --slo text cannot be read as a service-level objective.",
        "Write terms like per_user_tok_s>=20,ttft_p99_ms<=2000; docs/capacity.md lists every term.",
    ),
    _c(
        Code.W_CAPACITY_LOWER_BOUND,
        "warning",
        None,
        "capacity",
        "The capacity is a lower bound: the search reached --max-concurrency, was stopped, or the client set the pace of the first failing probe and its worst lag could have made that failure.",
        "Raise --max-concurrency, let the search finish, or run the client on a less loaded machine.",
    ),
    _c(
        Code.W_CAPACITY_UNSTABLE,
        "warning",
        None,
        "capacity",
        "A re-run of the boundary probe failed the SLO that its first run met; the answer was lowered to a level that held.",
        "Read the spread in the result; use more --rounds for steadier probes, or a quieter machine.",
    ),
    _c(
        Code.W_CAPACITY_FEW_REQUESTS,
        "warning",
        None,
        "capacity",
        "A percentile term passed on fewer requests than its rule asks for (enough to see the tail it bounds with 95 % probability: 299 for p99, 29 for p90 or p10), so a rarer tail could have gone unseen.",
        "Let capacity run the requests the rule asks for (drop --max-requests or raise it), or read the answer with the tail it could miss.",
    ),
    _c(
        Code.W_CAPACITY_UNPROBED,
        "warning",
        None,
        "capacity",
        "Some levels below the answer were never probed (more of them than --checks), so a dip in the curve there would go unseen.",
        "Raise --checks to probe more of the listed levels.",
    ),
    _c(
        Code.W_CAPACITY_NOT_IDLE,
        "warning",
        None,
        "capacity",
        "Before a probe the server's own counters still showed requests in flight after --drain-timeout, so that probe started on a busy server.",
        "Make sure nothing else sends requests to the server, or raise --drain-timeout.",
    ),
    _c(
        Code.E_WARMUP_STALLED,
        "error",
        "EndpointError",
        "capacity",
        "Every warmup request of a capacity search stalled: the server sent nothing for the stall limit. A server still loading, or one whose first token is slow, does this; the engine need not be broken.",
        "Raise --stall-timeout (capacity already allows at least twice the SLO's TTFT bound), or wait until the server is ready.",
    ),
    # quality: needle and agree
    _c(
        Code.E_CONTEXT,
        "error",
        "EndpointError",
        "quality",
        "The server does not serve the asked context length, or does not say its length.",
        "Use a smaller --context (the served length is shown), or give --context N or --recipe "
        "when the server does not state it.",
    ),
    _c(
        Code.E_SUITE,
        "error",
        "InputError",
        "quality",
        "A question suite could not be found, fetched or read.",
        "Use the built-in suite, a JSONL file (question, options, answer), or "
        "hf:OWNER/NAME@COMMIT of a dataset in MMLU-Pro's layout.",
    ),
    _c(
        Code.E_PROMPT_TRUNCATED,
        "error",
        "EndpointError",
        "quality",
        "The server counted fewer prompt tokens than were sent: it cut the prompt (as Ollama does "
        "at its context), so the probe says nothing about retrieval.",
        "Use --context at or below the count the server reported, or start the server with a "
        "longer context (Ollama: num_ctx).",
    ),
    # compare
    _c(
        Code.E_NOT_COMPARABLE,
        "error",
        "InputError",
        "compare",
        "Two numbers differ in conditions that make their ratio meaningless.",
        "Compare records measured under the same conditions; every differing condition is listed.",
    ),
    # hub
    _c(
        Code.E_AUTH,
        "error",
        "AuthError",
        "hub",
        "The hub refused the write: missing or wrong API token.",
        "Create a token with `rigbook hub token create NAME` and pass it with `--token`.",
    ),
    _c(
        Code.E_RATE_LIMIT,
        "error",
        "RateLimited",
        "hub",
        "Too many writes with this token in a short time.",
        "Wait and retry; the answer says how long.",
    ),
    _c(
        Code.E_TOO_LARGE,
        "error",
        "InputError",
        "hub",
        "The request body is larger than the hub accepts.",
        "Publish a smaller file; bench results should not carry raw logs.",
    ),
    _c(
        Code.E_RESULT_REFUSED,
        "error",
        "InputError",
        "hub",
        "The hub refused a bench result: incomplete conditions, a bad hash, or not run on the recipe's hardware or model.",
        "Each reason is listed; run `rigbook bench` against the recipe's setup with the missing conditions and publish the file it wrote.",
    ),
    _c(
        Code.E_METHOD,
        "error",
        "InputError",
        "hub",
        "The hub does not take that HTTP method on that path.",
        "Use a method the answer's Allow header lists; /openapi.json lists every operation.",
    ),
    _c(
        Code.E_DB,
        "error",
        "EnvironmentProblem",
        "hub",
        "The hub database could not be opened or migrated, or did not answer in time.",
        "Check the `--db` URL and that the database server runs; then `rigbook hub init`.",
    ),
    _c(
        Code.E_HUB_SERVER,
        "error",
        "HubServerError",
        "hub",
        "The hub failed on its side (an HTTP 5xx answer).",
        "Retry later; if it persists, the hub's operator finds the cause in the hub's log.",
    ),
    _c(
        Code.E_RESULT_REPLAYED,
        "error",
        "InputError",
        "hub",
        "The hub already holds this run: a result with the same requests (its fingerprint), perhaps under other times or another recipe.",
        "One run counts once, on one recipe: run the bench again for a new result.",
    ),
    _c(
        Code.E_SIGNATURE,
        "error",
        "InputError",
        "hub",
        "A result's signature does not verify: the result changed after it was signed, the key is not registered to the token, or it was signed for another recipe.",
        "Publish the file `rigbook bench` wrote, unchanged, with `rigbook hub publish` and a key registered to your token (`rigbook key register`).",
    ),
    _c(
        Code.E_KEY_REVOKED,
        "error",
        "InputError",
        "hub",
        "The key that signed the result was revoked on this hub.",
        "Create a new key with `rigbook key create --force`, register it with `rigbook key register`, and publish again.",
    ),
    _c(
        Code.E_REPRODUCTION_REFUSED,
        "error",
        "InputError",
        "hub",
        "The hub refused a reproduction: the recipe revision or the bench result it names is not on the hub, or its rows or verdict differ from those the hub recomputes from them.",
        "Each reason is listed; publish the reproduction folder's result.json first and the reproduction.json `rigbook reproduce` wrote, unchanged: `rigbook publish FOLDER/reproduction.json --hub URL`.",
    ),
    # machine
    _c(
        Code.E_DISK_FULL,
        "error",
        "EnvironmentProblem",
        "io",
        "A file could not be written: the disk is full or read-only.",
        "Free space on that disk or point RIGBOOK_HOME / `--out` elsewhere; what was already written is kept.",
    ),
    _c(
        Code.E_FILE,
        "error",
        "EnvironmentProblem",
        "io",
        "A file or folder could not be read or written: it is missing, or not yours to write.",
        "Check the path exists and is writable (the folder of `--out` / `--save`, RIGBOOK_HOME), or pick another.",
    ),
    _c(
        Code.E_INTERNAL,
        "error",
        "InternalError",
        "internal",
        "An unexpected failure inside rigbook.",
        "Re-run with RIGBOOK_DEBUG=1 for the traceback and report it.",
    ),
]

CODES: dict[Code, CodeInfo] = {c.code: c for c in _ALL}
if set(CODES) != set(Code) or len(CODES) != len(_ALL):
    raise ImportError("rigbook.codes: every Code needs exactly one registry entry")


def as_code(code: str) -> Code:
    """``code`` as a :class:`Code`; an unknown string raises ValueError at once (a typo, not an
    E_INTERNAL later)."""
    try:
        return Code(code)
    except ValueError:
        raise ValueError(f"unregistered code {code!r}; add it to rigbook/codes.py") from None


def codes_markdown() -> str:
    """The registry as the Markdown table in ``docs/codes.md`` (``rigbook codes --format md``)."""
    lines = [
        "# Codes",
        "",
        "Every finding and error rigbook reports has one of these codes. `error` blocks a launch or",
        "fails the command (exit 2), `warning` does not, `info` only tells. This file is generated",
        "from `rigbook/codes.py` by `rigbook codes --format md`; a test keeps the two in step.",
        "",
        "`raised as` is the class of `rigbook.errors` a library caller catches for that code. A",
        "warning or info is a finding, never raised: a record `{code, severity, gpus, message,",
        "remedy}` in `rigbook check --json` and in the `warnings` of bench and capacity results.",
        "",
        "| code | severity | stage | raised as | meaning | remedy |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in CODES.values():
        raised = f"`{c.raises}`" if c.raises else "(finding)"
        cells = [f"`{c.code}`", c.severity.value, c.stage, raised, c.meaning, c.remedy]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
