"""Shared helpers for the bench tests: run a bench against a synthetic server in this process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rigbook.bench.profiles import get_profile
from rigbook.bench.result import BenchResult
from rigbook.bench.runner import BenchSpec, run_bench
from rigbook.bench.telemetry import Sampler


def bench(url: str, out: Path, *, model: str = "synthetic", profile: str = "seed", **kw) -> BenchResult:
    kw.setdefault("warmup", 0)
    spec = BenchSpec(url=url, model=model, profile=get_profile(profile), out=out, **kw)
    return asyncio.run(run_bench(spec, rig=None, rig_unavailable="test", sampler=Sampler(None, "no GPU in tests")))


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
    proc = subprocess.Popen([sys.executable, "-m", "rigbook.bench.synthetic_server", "--port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
