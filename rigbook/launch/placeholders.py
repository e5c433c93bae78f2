"""Map a recipe's author-side values (GPU ids, host port, paths) to this machine's.

Values are substituted into argv items as plain strings; nothing is ever handed
to a shell, so a value with ``$(…)`` or ``;`` stays literal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from rigbook.launch.plan import GpuRef, Target

# Multicast over NVLink (NVLS) hangs or fails on many hosts and in VMs; these
# turn it off in NCCL, PyTorch symmetric memory and NVSHMEM unless you set them.
GPU_ENV_DEFAULTS = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

_PLACEHOLDER = re.compile(r"\$\{([A-Z_]+)\}")


def gpu_list(gpus: list[GpuRef], by_uuid: bool) -> str:
    """GPU ids joined by commas: UUIDs when the user named GPUs by UUID, else NVML indices."""
    return ",".join((g.uuid if by_uuid and g.uuid else str(g.index)) for g in gpus)


def cuda_env(target: Target) -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES for a native engine; PCI bus order so indices match nvidia-smi."""
    if not target.gpus:
        return {"CUDA_VISIBLE_DEVICES": ""}
    return {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": gpu_list(target.gpus, target.by_uuid),
    }


def docker_gpus(target: Target) -> str:
    """The `--gpus` value; docker parses it as CSV, so a list of devices is quoted inside the value."""
    return f'"device={gpu_list(target.gpus, target.by_uuid)}"'


def gpu_env_defaults(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The multicast-off defaults that the user's environment does not already set."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in GPU_ENV_DEFAULTS.items() if k not in environ}


def substitute(argv: list[str], values: dict[str, str]) -> list[str]:
    """Replace ``${NAME}`` in each argv item with ``values[NAME]``; unknown names stay as written."""
    return [_PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), item) for item in argv]


def drop_options(args: list[str], names: set[str]) -> tuple[list[str], list[str]]:
    """``args`` without the options in ``names`` (with their value, or as ``--opt=value``); and what was dropped."""
    kept: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(args):
        item = args[i]
        if item in names:
            dropped.append(" ".join(args[i : i + 2]))
            i += 2
        elif item.split("=", 1)[0] in names:
            dropped.append(item)
            i += 1
        else:
            kept.append(item)
            i += 1
    return kept, dropped
