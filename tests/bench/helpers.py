"""Shared helpers for the bench tests: run a bench against a synthetic server in this process or
as `rigbook bench`, and build the streams and records the rules are tested on."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from rigbook.bench.measure import Measurement, MeasureRequest, Progress, measure
from rigbook.bench.result import BenchResult
from rigbook.openai.stream import RawRequest, apply_event
from rigbook_testkit import launch
from tests.conftest import free_port


def measure_bench(
    url: str,
    out: Path,
    *,
    model: str = "synthetic",
    profile: str = "seed",
    stop: threading.Event | None = None,
    progress: Progress | None = None,
    **kw,
) -> Measurement:
    """A bench through the library entry point, telemetry off (no GPU here), no warmup unless
    asked for."""
    kw.setdefault("warmup", 0)
    request = MeasureRequest(url=url, model=model, profile=profile, out=out, telemetry=False, **kw)
    return measure(request, stop, progress)


def bench(url: str, out: Path, **kw) -> BenchResult:
    """The result of :func:`measure_bench`, for the tests that need nothing else."""
    return measure_bench(url, out, **kw).result


def bench_args(url: str, out: Path, options: str, *, model: str = "synthetic") -> list[str]:
    """`rigbook bench`'s arguments against ``url``, writing ``out``; ``options`` as typed."""
    return ["bench", url, "--model", model, "--out", str(out), *options.split()]


def rigbook(*args: str, timeout: float = 240, **kw) -> subprocess.CompletedProcess:
    """`python -m rigbook` with ``args``, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "rigbook", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def start_bench(url: str, out: Path, options: str) -> subprocess.Popen:
    """`rigbook bench` as its own process, output piped, for a test to signal or kill."""
    return subprocess.Popen(
        [sys.executable, "-m", "rigbook", *bench_args(url, out, options)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def signalled(proc: subprocess.Popen, sig: int) -> tuple[float, str, str]:
    """Send ``sig`` to ``proc`` and wait for it to exit; returns how many seconds that took and
    what it wrote to stdout and stderr."""
    sent = time.monotonic()
    proc.send_signal(sig)
    stdout, err = proc.communicate(timeout=60)
    return time.monotonic() - sent, stdout, err


def recorded(url: str) -> list[dict]:
    """The requests the synthetic server at ``url`` served since it started or was reset."""
    return httpx.get(url + "/_record").json()["requests"]


def streamed(tokens: int, *, gap_s: float = 0.01) -> RawRequest:
    """A request as the client read it: ``tokens`` events ``gap_s`` apart, each with its usage,
    then a length finish."""
    raw = RawRequest(sent=0.0)
    for k in range(tokens):
        event = {
            "choices": [{"delta": {"content": "x"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": k + 1},
        }
        apply_event(raw, event, 0.03 + k * gap_s)
    apply_event(raw, {"choices": [{"delta": {}, "finish_reason": "length"}]}, 0.03 + tokens * gap_s)
    raw.done = 0.04 + tokens * gap_s
    return raw


def within(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * abs(b)


def start_synthetic(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    """The test kit's synthetic server as its own process, on a port from
    :func:`tests.conftest.free_port`; returns (process, base URL)."""
    return launch.start_synthetic(*args, port=free_port())


@contextmanager
def synthetic_server(options: str) -> Iterator[str]:
    """:func:`start_synthetic` with ``options`` as typed, for the length of a ``with`` block;
    yields the base URL."""
    with launch.serving(*options.split(), port=free_port()) as url:
        yield url


def outcome(raw: RawRequest) -> dict:
    """Everything a record is built from, but the times (which differ by how each stamps)."""
    return {
        "events": raw.events,
        "usage": list(raw.usage),
        "reasoning": bytes(raw.reasoning),
        "finish_reason": raw.finish_reason,
        "final_usage": raw.final_usage,
        "continuous": raw.continuous,
        "prompt_tokens": raw.prompt_tokens,
        "error": raw.error,
        "done": raw.done is not None,
        "drafted": (raw.draft_tokens, raw.draft_accepted),
    }
