"""`--gpus` as `check`, `plan` and `up` take it: NVML indices or GPU/MIG UUIDs, comma-separated."""

from __future__ import annotations

import re

from rigbook.errors import InputError
from rigbook.rig.model import Rig

# An NVML index, or a GPU/MIG UUID as `nvidia-smi -L` prints it.
GPU_ID = re.compile(r"^(?:\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+)$")


def parse_gpu_ids(text: str) -> list[str]:
    """The items of a ``--gpus`` value, each an index or a UUID, each named once; else E_INPUT."""
    tokens = [t.strip() for t in text.split(",")]
    bad = [t for t in tokens if not GPU_ID.match(t)]
    if bad:
        raise InputError(
            "E_INPUT",
            f"--gpus {text!r}: {', '.join(repr(t) for t in bad)} is not a GPU index or UUID",
            remedy="Name GPUs by the indices or UUIDs `rigbook rig` (or `nvidia-smi -L`) lists, e.g. --gpus 0,1.",
        )
    if len(set(tokens)) != len(tokens):
        raise InputError(
            "E_INPUT",
            f"--gpus {text!r}: a GPU is named twice",
            remedy="Give each GPU once, e.g. --gpus 0,1.",
        )
    return tokens


def gpu_indices(tokens: list[str], rig: Rig) -> list[int]:
    """The NVML indices of ``tokens`` on ``rig``; E_INPUT for one the rig does not have."""
    found = []
    for token in tokens:
        match = [g.index for g in rig.gpus if str(g.index) == token or g.uuid == token]
        if not match:
            raise InputError(
                "E_INPUT",
                f"--gpus: this rig has no GPU {token!r}; it has "
                + (", ".join(f"{g.index} ({g.uuid})" for g in rig.gpus) or "none"),
            )
        found.append(match[0])
    return found
