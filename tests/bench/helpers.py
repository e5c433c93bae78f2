"""Shared helpers for the bench tests: run a bench against a synthetic server in this process or
as `rigbook bench`, and build the streams and records the rules are tested on."""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from rigbook.bench.measure import Measurement, MeasureRequest, Progress, measure
from rigbook.bench.result import BenchResult, Cell
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


def follows_from_records(cell: Cell) -> None:
    """The cell's figures are what its own records give, on the client's own stamps: each
    request's rate is its tokens after the first chunk over first to last token, the aggregate
    the counted tokens over the burst's span or the sustained window, the TTFT median the
    records'. Identities, not a wall-clock rate against a live server: how close those stamps
    are to the server's is `make bench-truth`'s figure."""
    rel = 1e-9
    done = [r for r in cell.requests if r.ok and (cell.mode == "sustained" or not r.cut_at_window)]
    assert done, cell.invalid_reasons
    for r in done:
        if r.decode_tok_s is not None:
            assert r.first_token_s is not None and r.last_token_s is not None
            span = r.last_token_s - r.first_token_s
            after = r.output_tokens - r.first_chunk_tokens
            assert r.decode_tok_s == pytest.approx(after / span, rel=rel), r
    m = cell.metrics
    if cell.mode == "burst":
        ends = [r.last_token_s for r in done if r.last_token_s is not None]
        tokens = sum(r.output_tokens for r in done)
        span = max(ends) - min(r.sent_s for r in done)
    else:
        tokens = round(sum(r.window_tokens or 0 for r in done))
        assert m.window_s is not None and m.tokens_in_window == tokens
        span = m.window_s
    assert m.aggregate_tok_s == pytest.approx(tokens / span, rel=rel)
    rates = [r.decode_tok_s for r in done if r.decode_tok_s is not None]
    ttft = [1000.0 * (r.first_token_s - r.sent_s) for r in done if r.first_token_s is not None]
    for got, values in ((m.per_request_decode_tok_s.p50, rates), (m.ttft_ms.p50, ttft)):
        assert got == (pytest.approx(statistics.median(values), rel=rel) if values else None)
    # A rate the client marked as moved by its own lag is never published.
    marked = set(cell.client.marked) if cell.client else set()
    if marked & {"aggregate_tok_s", "per_request_decode_tok_s"}:
        assert cell.client_bound


def served_as_recorded(cell: Cell, own: list[dict]) -> None:
    """Each completed request carried the tokens and events the server says it sent."""
    done = [r for r in cell.requests if r.ok and not r.cut_at_window]
    served = [s for s in own if s["completed"]]
    assert sorted(r.output_tokens for r in done) == sorted(s["tokens"] for s in served)
    assert sorted(r.chunks for r in done) == sorted(s["chunks"] for s in served)


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
