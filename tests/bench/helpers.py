"""Shared helpers for the bench tests: run a bench against a synthetic server in this process."""

from __future__ import annotations

from pathlib import Path

from rigbook.bench.measure import MeasureRequest, measure
from rigbook.bench.result import BenchResult


def bench(
    url: str, out: Path, *, model: str = "synthetic", profile: str = "seed", **kw
) -> BenchResult:
    """A bench through the library entry point, telemetry off (no GPU here)."""
    kw.setdefault("warmup", 0)
    request = MeasureRequest(url=url, model=model, profile=profile, out=out, telemetry=False, **kw)
    return measure(request).result


def within(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * abs(b)


def start_synthetic(*args: str):
    """The synthetic server as its own process; returns (process, base URL)."""
    import subprocess
    import sys
    import time

    import httpx

    from tests.conftest import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigbook.bench.synthetic_server", "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/v1/models", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("synthetic server did not start")
