"""Read an engine log for the first known error and map it to a code.

Known patterns come first (peer access and NCCL → E_P2P, out of memory → E_GPU_MEMORY,
address in use → E_PORT); each engine adapter may add its own. When none matches,
the first error-looking line is what E_ENGINE_EXIT reports.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel


class LogPattern(BaseModel):
    """A regular expression over one log line and the code a match means."""

    code: str
    pattern: str
    why: str
    fatal: bool = False
    """The engine cannot become ready after this line, even while its process still runs (it may take
    minutes to exit): the launch is stopped and fails with the code as soon as the line appears."""


class LogHit(BaseModel):
    """The line of a log that explains a failure."""

    code: str
    line: str
    line_no: int
    why: str


# Order matters: the most specific cause wins when several lines match.
COMMON_PATTERNS: list[LogPattern] = [
    LogPattern(
        code="E_GPU_MEMORY",
        pattern=r"Free memory on device .* is less than desired GPU memory utilization",
        why="vLLM found less free GPU memory than --gpu-memory-utilization asks for",
    ),
    LogPattern(
        code="E_GPU_MEMORY",
        pattern=r"CUDA out of memory|OutOfMemoryError|cudaMalloc failed: out of memory|CUDA_ERROR_OUT_OF_MEMORY",
        why="the GPU ran out of memory",
    ),
    LogPattern(
        code="E_GPU_MEMORY",
        pattern=r"No available memory for the cache blocks|Not enough memory.*KV cache|insufficient memory for (?:the )?KV cache",
        why="no GPU memory was left for the KV cache",
    ),
    LogPattern(
        code="E_P2P",
        pattern=r"peer access is not supported|peer mapping resources exhausted|cudaErrorPeerAccess|CUDA_ERROR_PEER_ACCESS",
        why="CUDA peer access between the GPUs failed",
    ),
    LogPattern(
        code="E_P2P",
        pattern=r"NCCL WARN|NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclInvalidUsage",
        why="NCCL (GPU-to-GPU communication) failed",
    ),
    LogPattern(
        code="E_PORT",
        pattern=r"[Aa]ddress already in use|port is already allocated|EADDRINUSE",
        why="the port the engine listens on is taken",
    ),
]

_EXCEPTION_LINE = re.compile(
    r"^\s*(?:\S+ pid=\d+\)\s*)?(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit)\b:?"
)
_ERRORISH = re.compile(r"\b(?:ERROR|FATAL|Fatal|fatal|error|Error|failed|Failed|Traceback)\b")


def scan_lines(
    lines: list[str], extra: list[LogPattern] | None = None, *, common: bool = True
) -> LogHit | None:
    """The first line matching a known pattern (adapter patterns before common ones, if ``common``), or None."""
    patterns = [*(extra or []), *(COMMON_PATTERNS if common else [])]
    compiled = [(p, re.compile(p.pattern)) for p in patterns]
    for pattern, regex in compiled:
        for no, line in enumerate(lines, start=1):
            if regex.search(line):
                return LogHit(code=pattern.code, line=line.strip(), line_no=no, why=pattern.why)
    return None


def first_error_line(lines: list[str]) -> LogHit | None:
    """The engine's first error line: an exception line if there is one, else the first error-looking line."""
    for regex in (_EXCEPTION_LINE, _ERRORISH):
        for no, line in enumerate(lines, start=1):
            if line.strip() and regex.search(line) and not line.lstrip().startswith("Traceback"):
                return LogHit(
                    code="E_ENGINE_EXIT",
                    line=line.strip(),
                    line_no=no,
                    why="the engine's first error line",
                )
    return None


def explain_exit(lines: list[str], extra: list[LogPattern] | None = None) -> LogHit | None:
    """Why an engine failed: a known pattern first, else its first error line."""
    return scan_lines(lines, extra) or first_error_line(lines)


def log_size(path: Path) -> int:
    """The size of a log file now (0 when there is none): where the next launch's lines start."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def read_tail(path: Path, max_bytes: int = 2_000_000, *, since: int = 0) -> list[str]:
    """The last ``max_bytes`` of a log file written after byte ``since``, as lines (empty when there is no file yet).

    A log is appended to by every launch of the same name: ``since`` keeps an earlier run's lines out.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(since, size - max_bytes) if since <= size else 0)
            data = handle.read()
    except FileNotFoundError:
        return []
    return data.decode("utf-8", errors="replace").splitlines()
