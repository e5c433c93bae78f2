"""The NVIDIA kernel module parameters (/proc/driver/nvidia/params), e.g. RegistryDwords, EnableStreamMemOPs."""

from __future__ import annotations

from pathlib import Path

from rigbook.rig.model import ProbeError

PARAMS_PATH = Path("/proc/driver/nvidia/params")


def parse_params(text: str) -> dict[str, str]:
    """``Name: value`` lines as a mapping; quoted values lose their quotes."""
    params = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            params[name.strip()] = value.strip().strip('"')
    return params


def read_params(path: Path = PARAMS_PATH) -> tuple[dict[str, str], ProbeError | None]:
    """The parameters, or the error that kept them from being read."""
    try:
        return parse_params(path.read_text(encoding="utf-8", errors="replace")), None
    except OSError as exc:
        return {}, ProbeError(field="params", query=f"read {path}", error=exc.strerror or str(exc))
