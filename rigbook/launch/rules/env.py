"""Environment an engine is started with: an allow-list, because a variable can run code.

``PYTHONWARNINGS`` plus ``BROWSER`` runs a host command when Python starts,
``LD_PRELOAD`` loads a library into the engine, ``PATH`` picks which program
runs. So a recipe's variables pass only when an engine documents the family
(``VLLM_*``, ``NCCL_*`` …); any other needs ``--allow env:NAME``, and loader and
interpreter variables are refused whatever is allowed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rigbook.launch.rules import Danger

ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# Families the engines document as their own knobs.
FAMILIES = (
    "VLLM_",
    "SGLANG_",
    "SGL_",
    "NCCL_",
    "CUDA_",
    "OMP_",
    "MKL_",
    "HF_",
    "TORCH_",
    "PYTORCH_",
    "TORCHINDUCTOR_",
    "TRITON_",
    "NVSHMEM_",
    "FLASHINFER_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "LLAMA_",
    "GGML_",
    "NVIDIA_TF32_",
    "OPENBLAS_",
    "KMP_",
    "UCX_",
    "HIP_",
    "ROCM_",
)
NAMES = {"TOKENIZERS_PARALLELISM", "OMP_NUM_THREADS", "MAX_JOBS", "TZ", "LANG", "LC_ALL"}

# Loader and interpreter variables: they run code or pick the program, whatever --allow says.
NEVER_EXACT = {
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
}
NEVER_PREFIX = ("LD_", "DYLD_", "PYTHON", "GIT_", "CONDA", "PIP_", "LUA_")
# Inside an allowed family, still loaders (a plugin is a shared library or a module by name).
NEVER_INSIDE = re.compile(r"PLUGIN")
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
# Inside allowed families, but a token (sent to whoever serves) or a redirect of downloads.
NEEDS_ALLOW = {
    "HF_TOKEN",
    "HF_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_ENDPOINT",
    "HUGGING_FACE_HUB_TOKEN",
    "VLLM_API_KEY",
}
# Variables that name a folder or file: the value must lie inside a folder rigbook owns.
PATH_LIKE = re.compile(r"(_HOME|_CACHE|_CACHE_DIR|_DIR|_ROOT|_PATH|_FILE|_PREFIX|_BUNDLE|_CONFIG)$")


def never(name: str) -> bool:
    """A loader or interpreter variable: refused whatever is allowed."""
    upper = name.upper()
    return (
        upper in NEVER_EXACT
        or upper.startswith(NEVER_PREFIX)
        or upper in SELECTION
        or bool(NEVER_INSIDE.search(upper))
    )


def _documented(name: str) -> bool:
    return name in NAMES or (
        name.startswith(FAMILIES) and name not in NEEDS_ALLOW and name not in RIGBOOK_SETS
    )


def _inside(value: str, roots: list[Path]) -> bool:
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        return False
    real = Path(os.path.realpath(path))
    return any(
        real == Path(os.path.realpath(root)) or real.is_relative_to(os.path.realpath(root))
        for root in roots
    )


def env_dangers(
    env: dict[str, str], *, roots: list[Path], container: bool = False, own: set[str] | None = None
) -> list[Danger]:
    """Dangers in the variables a recipe sets.

    ``container``: the variables reach only a container, where the image defines its own knobs
    (``TP``, ``MODEL`` …); loader, interpreter and selection variables are refused there too.
    ``own``: names the recipe kind defines (a script's drafter variable). ``roots``: folders a
    path-valued variable may name.
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
        elif never(name):
            found.append(
                Danger(
                    None,
                    f"env {name}: a loader or interpreter variable; it can run code or pick "
                    "the program that runs, so no recipe may set it",
                )
            )
        elif not container and name not in (own or set()) and not _documented(name):
            what = (
                "sets a default rigbook owns"
                if name in RIGBOOK_SETS
                else "carries a token or redirects downloads"
                if name in NEEDS_ALLOW
                else "is not a documented engine variable; it can change what a program loads "
                "or runs"
            )
            found.append(Danger(f"env:{name}", f"env {name} {what}"))
        elif not container and PATH_LIKE.search(upper) and value and not _inside(value, roots):
            found.append(
                Danger(
                    f"env:{name}",
                    f"env {name}={value} names a path outside "
                    f"{' and '.join(map(str, roots))}; the engine would write or read there",
                )
            )
    return found
