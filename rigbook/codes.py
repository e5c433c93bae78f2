"""The one registry of codes: every finding and every error rigbook reports.

Each code has a severity (``error`` blocks a launch or fails a command,
``warning`` does not, ``info``), the stage that raises it, what it means and
what to do. ``docs/codes.md`` lists this table in full; a test keeps the two
in step.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict


class Severity(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"


class Code(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str
    severity: Severity
    stage: str
    meaning: str
    remedy: str


def _c(code: str, severity: str, stage: str, meaning: str, remedy: str) -> Code:
    return Code(code=code, severity=Severity(severity), stage=stage, meaning=meaning, remedy=remedy)


_ALL = [
    # recipe: reading and validating recipes
    _c("E_RECIPE_INVALID", "error", "recipe", "The recipe does not match the schema.",
       "Fix each field listed by its path; `rigbook recipe schema` prints the full schema."),
    _c("E_RECIPE_NOT_FOUND", "error", "recipe", "No catalog slug, file or URL by that name.",
       "Run `rigbook recipes list` for the catalog, or give a path to a .json file or an http(s) URL."),
    _c("E_FETCH", "error", "recipe", "A file or URL could not be read.",
       "Check the path or URL, the network and the permissions, then retry."),
    _c("E_INPUT", "error", "cli", "An option or argument is not valid.",
       "See `rigbook COMMAND --help` for the accepted values."),
    # rig probe and preflight check
    _c("E_GPU_COUNT", "error", "check", "Fewer GPUs are available than the recipe needs.",
       "Use a machine with enough GPUs, free GPUs with `--gpus`, or pick a recipe for your GPU count."),
    _c("E_GPU_MODEL", "error", "check", "The GPUs are not the card the recipe was made for.",
       "Pick a recipe for your card; numbers and memory fit are only known for the recipe's card."),
    _c("W_GPU_VARIANT", "warning", "check", "The GPU is a sibling variant of the recipe's card (e.g. Max-Q vs Workstation).",
       "Expect different power envelopes and speeds; record the variant with any numbers you publish."),
    _c("E_GPU_MEMORY", "error", "check", "Too little free GPU memory for the recipe.",
       "Stop other GPU work (the processes holding memory are listed) and verify the free MiB per GPU."),
    _c("E_P2P", "error", "check", "CUDA peer access is missing between GPUs the recipe runs tensor-parallel.",
       "Check the NVIDIA driver, the PCIe topology (`nvidia-smi topo -m`), ACS on PCIe switches and the IOMMU setting (iommu=pt or off)."),
    _c("W_P2P_TEST", "warning", "check", "The functional peer-access copy test was skipped or could not run.",
       "Install PyTorch or CuPy with CUDA to run the copy test; NVML's P2P status alone was used."),
    _c("W_POWER", "warning", "check", "The enforced GPU power limit differs from the per-card power the recipe's numbers were measured at, or is below the card's default.",
       "Set it with `sudo nvidia-smi -i N -pl WATTS` to match, or record your limit with any comparison."),
    _c("W_TOPOLOGY", "warning", "check", "Tensor-parallel GPUs are connected across host bridges or NUMA nodes.",
       "Prefer GPUs under one PCIe switch or host bridge (`nvidia-smi topo -m`); expect slower all-reduce."),
    _c("E_DRIVER", "error", "check", "The NVIDIA driver or its CUDA version is below the recipe's floor, or no driver is loaded.",
       "Install a driver at or above the floor the recipe names."),
    _c("E_DOCKER", "error", "check", "The recipe runs in Docker and no working Docker engine was found.",
       "Install Docker Engine and make sure `docker info` works for your user."),
    _c("E_TOOLKIT", "error", "check", "Docker has no NVIDIA runtime or CDI devices (NVIDIA Container Toolkit).",
       "Install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`, then restart Docker."),
    _c("E_TOOL", "error", "check", "A host tool the recipe needs is missing.",
       "Install the tool with your package manager."),
    _c("E_DISK", "error", "check", "The weights are larger than the free space where models are stored.",
       "Free disk space or point `--models-dir` at a larger disk."),
    _c("E_PORT", "error", "check", "The port the engine would listen on is already taken.",
       "Stop what holds the port or choose another with `--port`."),
    _c("W_GPU_BUSY", "warning", "check", "A GPU the recipe would use is already running compute processes.",
       "Stop the listed processes for clean numbers, or choose other GPUs with `--gpus`."),
    _c("W_WEDGED", "warning", "check", "A GPU is fully busy but no process owns it (a wedged or leaked context).",
       "Find the stuck job (`nvidia-smi`, `fuser -v /dev/nvidia*`); reset the GPU if nothing holds it."),
    _c("W_LICENSE", "warning", "check", "A part of the recipe (weights, drafter, engine) is under a non-commercial license.",
       "Check the terms fit your use; the message names the alternative the recipe offers."),
    _c("I_NO_GPU", "info", "rig", "No NVIDIA GPU or driver was found on this machine.",
       "Only CPU recipes (the embedded default) can run here."),
    # launch
    _c("E_UNSAFE", "error", "launch", "The recipe asks for a dangerous container or host option.",
       "Read the option; if you trust it, allow it by name with `--allow OPTION`."),
    _c("E_ENGINE_EXIT", "error", "launch", "The engine process exited before it became ready.",
       "Read the engine's first error line (shown) and its log (`rigbook logs NAME`)."),
    _c("E_NOT_READY", "error", "launch", "The engine did not become ready before the timeout.",
       "Check `rigbook logs NAME`; large models may need a longer `--timeout`."),
    _c("E_LOCKED", "error", "launch", "The GPUs (or CPU slot) are already held by another rigbook launch.",
       "Stop that launch with `rigbook down NAME`, or pick other GPUs with `--gpus`."),
    _c("E_ENGINE_MISSING", "error", "launch", "The engine's program or package is not installed.",
       "Install the engine the recipe names (for the embedded default: `make setup`)."),
    _c("E_NOT_RUNNING", "error", "launch", "No rigbook launch by that name is running.",
       "See `rigbook status` for what runs."),
    _c("E_CONFIRM", "error", "launch", "The launch was not confirmed.",
       "Answer yes at the prompt, or pass `--yes` in scripts."),
    # endpoint: smoke test and bench client
    _c("E_CONNECT", "error", "endpoint", "The endpoint refused the connection or timed out.",
       "Check that the server runs and listens on that host and port (`rigbook status`)."),
    _c("E_HTTP", "error", "endpoint", "The endpoint answered with an HTTP error.",
       "Read the status and body shown; check the URL path and the request options."),
    _c("E_MODEL_ID", "error", "endpoint", "The endpoint does not serve the requested model id.",
       "Use one of the model ids the endpoint lists (shown), or omit `--model`."),
    _c("E_EMPTY_REPLY", "error", "endpoint", "The endpoint answered with an empty reply.",
       "Check the engine log; the model may be misconfigured or out of context."),
    # bench
    _c("E_BENCH_INVALID", "error", "bench", "A bench cell had failed requests and is not valid.",
       "Read each failure reason in the result; fix the server or the profile and run again."),
    _c("W_CLIENT_BOUND", "warning", "bench", "The client, not the server, set the pace of a cell.",
       "Run the client on a less loaded machine or lower the concurrency; the cell is marked client_bound."),
    _c("W_CUT_SHORT", "warning", "bench", "The run was stopped before it finished; the result holds what was measured.",
       "Run again to complete the missing cells."),
    _c("E_RESULT_INVALID", "error", "bench", "A bench result file is malformed or its hash does not check out.",
       "Use the file rigbook bench wrote, unmodified."),
    # compare
    _c("E_NOT_COMPARABLE", "error", "compare", "Two numbers differ in conditions that make their ratio meaningless.",
       "Compare records measured under the same conditions; every differing condition is listed."),
    # hub
    _c("E_AUTH", "error", "hub", "The hub refused the write: missing or wrong API token.",
       "Create a token with `rigbook hub token create NAME` and pass it with `--token`."),
    _c("E_RATE_LIMIT", "error", "hub", "Too many writes with this token in a short time.",
       "Wait and retry; the answer says how long."),
    _c("E_TOO_LARGE", "error", "hub", "The request body is larger than the hub accepts.",
       "Publish a smaller file; bench results should not carry raw logs."),
    _c("E_RESULT_REFUSED", "error", "hub",
       "The hub refused a bench result: incomplete conditions, a bad hash, or not run on the recipe's hardware or model.",
       "Each reason is listed; run `rigbook bench` against the recipe's setup with the missing conditions and publish the file it wrote."),
    _c("E_METHOD", "error", "hub", "The hub does not take that HTTP method on that path.",
       "Use a method the answer's Allow header lists; /openapi.json lists every operation."),
    _c("E_DB", "error", "hub", "The hub database could not be opened or migrated.",
       "Check the `--db` URL and that the database server runs; then `rigbook hub init`."),
    # machine
    _c("E_DISK_FULL", "error", "io", "A file could not be written: the disk is full or read-only.",
       "Free space on that disk or point RIGBOOK_HOME / `--out` elsewhere; what was already written is kept."),
    _c("E_FILE", "error", "io", "A file or folder could not be read or written: it is missing, or not yours to write.",
       "Check the path exists and is writable (the folder of `--out` / `--save`, RIGBOOK_HOME), or pick another."),
    _c("E_INTERNAL", "error", "internal", "An unexpected failure inside rigbook.",
       "Re-run with RIGBOOK_DEBUG=1 for the traceback and report it."),
]

CODES: dict[str, Code] = {c.code: c for c in _ALL}


def lookup(code: str) -> Code:
    """The registry entry of ``code``; raises KeyError for an unknown code."""
    return CODES[code]


def codes_markdown() -> str:
    """The registry as the Markdown table in ``docs/codes.md`` (``rigbook codes --format md``)."""
    lines = [
        "# Codes",
        "",
        "Every finding and error rigbook reports has one of these codes. `error` blocks a launch or",
        "fails the command (exit 2), `warning` does not, `info` only tells. This file is generated",
        "from `rigbook/codes.py` by `rigbook codes --format md`; a test keeps the two in step.",
        "",
        "| code | severity | stage | meaning | remedy |",
        "| --- | --- | --- | --- | --- |",
    ]
    for c in CODES.values():
        cells = [f"`{c.code}`", c.severity.value, c.stage, c.meaning, c.remedy]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
