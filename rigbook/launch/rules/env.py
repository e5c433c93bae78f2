"""Environment an engine is started with: exact names with typed values, because a variable can run
code.

``PYTHONWARNINGS`` plus ``BROWSER`` runs a host command when Python starts,
``LD_PRELOAD`` loads a library into the engine, ``CUDA_INJECTION64_PATH``,
``NCCL_CONF_FILE``, ``OMP_TOOL_LIBRARIES`` and ``TRITON_CACHE_MANAGER`` load a
library or a module of the recipe's choosing, ``VLLM_HOST_IP`` moves rigbook's
listeners. So there are no families: a recipe's variable passes only when it is
one of :data:`ALLOWED` (for its engine kind) with a value of its type. A
variable whose name says it names a path, loads code or opens a socket is
refused whatever is allowed; any other needs ``--allow env:NAME``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rigbook.launch.rules import Danger
from rigbook.launch.rules.table import INT_RE, SAFE_TEXT

ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class EnvRule(NamedTuple):
    """What values one variable may take: ``value`` is int, bool, text or choice."""

    value: str
    kinds: tuple[str, ...] = ()  # engine kinds it belongs to; empty: every native kind
    low: int = 0
    high: int = 1_000_000
    choices: tuple[str, ...] = ()


_THREADS = EnvRule("int", low=1, high=4096)
_BOOL = EnvRule("bool")
_VLLM = ("vllm",)
_SGLANG = ("sglang",)
_LLAMA = ("llama_server", "llama_cpp")
NCCL_LEVELS = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")

#: Every variable a recipe may set, and its values (the engines' documented tuning knobs).
ALLOWED: dict[str, EnvRule] = {
    "OMP_NUM_THREADS": _THREADS,
    "MKL_NUM_THREADS": _THREADS,
    "OPENBLAS_NUM_THREADS": _THREADS,
    "TOKENIZERS_PARALLELISM": _BOOL,
    "CUDA_LAUNCH_BLOCKING": _BOOL,
    "CUDA_MODULE_LOADING": EnvRule("choice", choices=("LAZY", "EAGER")),
    "CUDA_DEVICE_MAX_CONNECTIONS": EnvRule("int", low=1, high=128),
    "NCCL_DEBUG": EnvRule("choice", choices=("VERSION", "WARN", "INFO", "TRACE", "ABORT")),
    "NCCL_P2P_DISABLE": _BOOL,
    "NCCL_IB_DISABLE": _BOOL,
    "NCCL_SHM_DISABLE": _BOOL,
    "NCCL_CUMEM_ENABLE": _BOOL,
    "NCCL_P2P_LEVEL": EnvRule("choice", choices=NCCL_LEVELS),
    "NCCL_MIN_NCHANNELS": EnvRule("int", low=1, high=64),
    "NCCL_MAX_NCHANNELS": EnvRule("int", low=1, high=64),
    "PYTORCH_CUDA_ALLOC_CONF": EnvRule("text"),
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": EnvRule("int", high=3),
    "HF_HUB_OFFLINE": _BOOL,
    "TRANSFORMERS_OFFLINE": _BOOL,
    "HF_HUB_DISABLE_TELEMETRY": _BOOL,
    "HF_HUB_ENABLE_HF_TRANSFER": _BOOL,
    "VLLM_CPU_KVCACHE_SPACE": EnvRule("int", _VLLM, high=1_048_576),
    "VLLM_CPU_OMP_THREADS_BIND": EnvRule("text", _VLLM),
    "VLLM_CPU_NUM_OF_RESERVED_CPU": EnvRule("int", _VLLM, high=4096),
    "VLLM_ATTENTION_BACKEND": EnvRule("text", _VLLM),
    "VLLM_USE_V1": EnvRule("bool", _VLLM),
    "VLLM_WORKER_MULTIPROC_METHOD": EnvRule("choice", _VLLM, choices=("spawn", "fork")),
    "VLLM_LOGGING_LEVEL": EnvRule(
        "choice", _VLLM, choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    ),
    "VLLM_ENABLE_V1_MULTIPROCESSING": EnvRule("bool", _VLLM),
    "VLLM_USE_FLASHINFER_SAMPLER": EnvRule("bool", _VLLM),
    "VLLM_FLASH_ATTN_VERSION": EnvRule("int", _VLLM, low=2, high=4),
    "VLLM_MLA_DISABLE": EnvRule("bool", _VLLM),
    "VLLM_USE_DEEP_GEMM": EnvRule("bool", _VLLM),
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": EnvRule("bool", _VLLM),
    "VLLM_ENGINE_ITERATION_TIMEOUT_S": EnvRule("int", _VLLM, low=1, high=86_400),
    "VLLM_RPC_TIMEOUT": EnvRule("int", _VLLM, low=1, high=86_400_000),
    "VLLM_SLEEP_WHEN_IDLE": EnvRule("bool", _VLLM),
    "VLLM_FUSED_MOE_CHUNK_SIZE": EnvRule("int", _VLLM, low=1, high=1_048_576),
    "VLLM_MARLIN_USE_ATOMIC_ADD": EnvRule("bool", _VLLM),
    "SGL_ENABLE_JIT_DEEPGEMM": EnvRule("bool", _SGLANG),
    "SGLANG_ENABLE_TORCH_COMPILE": EnvRule("bool", _SGLANG),
    "GGML_CUDA_ENABLE_UNIFIED_MEMORY": EnvRule("bool", _LLAMA),
    "GGML_CUDA_NO_PINNED": EnvRule("bool", _LLAMA),
}
BOOL_WORDS = {"0", "1", "true", "false", "True", "False", "TRUE", "FALSE", "yes", "no", "on", "off"}

# Loader and interpreter variables: they run code or pick the program, whatever --allow says,
# on the host and in a container alike.
LOADERS = {
    "PATH",
    "BROWSER",
    "BASH_ENV",
    "ENV",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "RUBYOPT",
    "RUBYLIB",
    "IFS",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "GLIBC_TUNABLES",
    "GCONV_PATH",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "SHELL",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "JAVA_TOOL_OPTIONS",
    "MALLOC_CHECK_",
    "HOME",
    "VIRTUAL_ENV",
    "UV_PYTHON",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "CUDA_INJECTION64_PATH",
    "CUDA_INJECTION32_PATH",
    "NCCL_CONF_FILE",
    "OMP_TOOL_LIBRARIES",
    "TRITON_CACHE_MANAGER",
}
# On the host, also these: they read a file of the recipe's choosing or move a listener.
NEVER_EXACT = LOADERS | {
    "TZ",
    "TZDIR",
    "OMP_TOOL",
    "TRITON_CACHE_DIR",
    "VLLM_LOGGING_CONFIG_PATH",
    "VLLM_HOST_IP",
    "VLLM_PORT",
    "NCCL_NET",
    "NCCL_TUNER_PLUGIN",
    "NCCL_PROFILER_PLUGIN",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "SSL_CERT_FILE",
}
NEVER_PREFIX = ("LD_", "DYLD_", "PYTHON", "GIT_", "CONDA", "PIP_", "LUA_", "LLAMA_ARG_")
# Words (between `_`) that mark a variable naming a path, code to load, a socket or a listener.
NEVER_WORDS = {
    "PATH",
    "PATHS",
    "FILE",
    "FILES",
    "DIR",
    "DIRS",
    "HOME",
    "CACHE",
    "CONFIG",
    "CONF",
    "PLUGIN",
    "PLUGINS",
    "LIB",
    "LIBS",
    "LIBRARY",
    "LIBRARIES",
    "MANAGER",
    "MODULE",
    "INJECTION64",
    "INJECTION32",
    "HOST",
    "IP",
    "ADDR",
    "ADDRESS",
    "PORT",
    "URL",
    "URI",
    "ENDPOINT",
    "SOCKET",
    "TOOL",
    "TOOLS",
    "PRELOAD",
    "PREFIX",
    "ROOT",
    "BUNDLE",
    "TEMPLATE",
    "SCRIPT",
    "COMMAND",
    "CMD",
    "EXEC",
    "LOADER",
    "IFNAME",
    "SERVER",
    "PROXY",
    "IMPORT",
    "CLASS",
}
# Device selection and rigbook's own multicast defaults are rigbook's to set.
SELECTION = {
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "GPU_DEVICE_ORDINAL",
}
RIGBOOK_SETS = {"NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"}
# A token (sent to whoever serves) or a redirect of downloads: only when the user allows it.
NEEDS_ALLOW = {"HF_TOKEN", "HF_HUB_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "HF_ENDPOINT"}


def loader(name: str) -> bool:
    """A loader, interpreter or GPU-selection variable: refused on the host and in a container."""
    upper = name.upper()
    return (
        upper in LOADERS
        or upper.startswith(NEVER_PREFIX)
        or upper in SELECTION
        or "PLUGIN" in upper
    )


def never(name: str) -> bool:
    """A variable no engine on the host may be given: a loader, or one that names a path, loads
    code or moves a listener."""
    upper = name.upper()
    return (
        loader(name)
        or upper in NEVER_EXACT
        or (bool(set(upper.split("_")) & NEVER_WORDS) and upper not in NEEDS_ALLOW)
    )


def value_problem(rule: EnvRule, value: str) -> str | None:
    """Why ``value`` is not one ``rule`` accepts, or None."""
    if rule.value == "bool":
        return None if value in BOOL_WORDS else "is not 0/1/true/false"
    if rule.value == "int":
        if not INT_RE.fullmatch(value):
            return "is not a whole number"
        return (
            None if rule.low <= int(value) <= rule.high else f"is outside {rule.low}..{rule.high}"
        )
    if rule.value == "choice":
        return None if value in rule.choices else f"is not one of {', '.join(rule.choices)}"
    return None if SAFE_TEXT.fullmatch(value) else "is not a plain value (no /, space or quote)"


def allowed_for(name: str, kind: str | None) -> EnvRule | None:
    """The rule of ``name`` when engine ``kind`` may be given it."""
    rule = ALLOWED.get(name)
    if rule is None or (rule.kinds and kind not in rule.kinds):
        return None
    return rule


def env_dangers(
    env: dict[str, str],
    *,
    kind: str | None = None,
    container: bool = False,
    own: set[str] | None = None,
) -> list[Danger]:
    """Dangers in the variables a recipe sets for engine ``kind``.

    ``container``: the variables reach only a container, where the image defines its own knobs
    (``TP``, ``MODEL`` …); loader, interpreter and selection variables are refused there too.
    ``own``: names the recipe kind defines (a script's drafter variable).
    """
    found: list[Danger] = []
    for name, value in env.items():
        upper = name.upper()
        if upper in SELECTION:
            found.append(
                Danger(
                    None, f"env {name}: GPU selection is rigbook's (--gpus); a recipe cannot set it"
                )
            )
        elif loader(name) if container else never(name):
            found.append(
                Danger(
                    None,
                    f"env {name}: it names a path, loads code, picks the program that runs or "
                    "moves a listener, so no recipe may set it",
                )
            )
        elif container or name in (own or set()):
            continue
        elif rule := allowed_for(name, kind):
            problem = value_problem(rule, value)
            if problem:
                found.append(Danger(None, f"env {name}={value[:80]!r}: the value {problem}"))
        else:
            what = (
                "sets a default rigbook owns"
                if name in RIGBOOK_SETS
                else "carries a token or redirects downloads"
                if name in NEEDS_ALLOW
                else f"is not a variable rigbook allows for {kind or 'this engine'}; it can "
                "change what a program loads or runs"
            )
            found.append(Danger(f"env:{name}", f"env {name} {what}"))
    return found
