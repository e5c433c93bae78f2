"""Test helpers: bench results built with the real BenchResult model, a uvicorn hub on loopback,
`rigbook hub serve --workers N` in a process of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from rigbook.bench.result import BenchResult, Conditions, ProfileRef, RunTelemetry
from rigbook.recipe.schema import PerfConditions, PerfPoint, Sampling
from rigbook.rig.model import GpuSummary, RigSummary
from tests.conftest import free_port

SMALL_SLUG = "smollm2-135m-instruct-q4-1-on-1x-h200-llama-cpp-cuda"


def point_conditions(**changes) -> PerfConditions:
    """Complete conditions of one GPU point (an H200 at 700 W)."""
    base = dict(
        gpu_count=1,
        card="NVIDIA H200",
        power_limit_w_per_gpu=700.0,
        engine="llama.cpp",
        engine_version="0.3.36",
        quant="Q4_1",
        sampling=Sampling(temperature=0.0, top_p=1.0),
        reply_tokens=400,
        reply_length_held=True,
        thinking=False,
        token_count_source="server_continuous",
        bench_tool="rigbook",
    )
    return PerfConditions(**(base | changes))


def make_result(
    slug: str | None = SMALL_SLUG,
    *,
    decode: tuple[float, ...] = (321.46, 900.2539),
    conditions: PerfConditions | None = None,
    power: float | None = 700.0,
    model: str = "smollm2-135m-instruct",
    gpu_names: tuple[str, ...] = ("NVIDIA H200",),
) -> BenchResult:
    """A hashed bench result with one point per concurrency 1, 4, … (by default one H200 and the recipe's
    model id), without its requests: its points are measured, unverified."""
    cond = conditions or point_conditions()
    points = [
        PerfPoint(
            context_len=512,
            decode_tok_s=v,
            concurrency=c,
            ttft_ms=40.0,
            claimed_by="measured",
            per_request_decode_tok_s_median=round(v / c, 2),
            notes=f"burst c={c}",
            conditions=cond,
        )
        for v, c in zip(decode, (1, 4, 8, 16), strict=False)
    ]
    rig = RigSummary(
        hostname="h200-vm",
        os="Debian 12",
        cpu="Xeon",
        driver_version="570.1",
        cuda_driver_version="12.8",
        gpus=[
            GpuSummary(index=i, name=name, uuid=f"GPU-{i}", power_enforced_limit_w=power)
            for i, name in enumerate(gpu_names)
        ],
    )
    return BenchResult(
        conditions=Conditions(
            url="http://127.0.0.1:8022/v1",
            model=model,
            engine=cond.engine,
            engine_version="0.3.36",
            recipe_slug=slug,
            recipe_revision=1,
            rig=rig,
            profile=ProfileRef(
                name="guide-400",
                version=1,
                content_hash="sha256:" + "0" * 64,
                max_tokens=400,
                temperature=0.0,
                top_p=1.0,
                thinking=False,
                reply_length_held=True,
                workload="prose",
            ),
            mode="burst",
            rigbook_version="0.1.0",
            started_at="2026-10-21T10:00:00Z",
        ),
        cells=[],
        perf_points=points,
        telemetry=RunTelemetry(available=False, reason="built by a test"),
    ).with_hash()


@contextmanager
def live_hub(app) -> Iterator[str]:
    """Serve ``app`` with a real uvicorn on a free loopback port; yields the base URL."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def served_workers(db: str, port: int, *flags: str, workers: int = 2) -> Iterator[subprocess.Popen]:
    """`rigbook hub serve --workers N` on ``db`` and ``port`` (a process group of its own), up and
    answering; stopped (the whole group) on the way out."""
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "rigbook", "hub", "serve"),
            *("--port", str(port), "--db", db, "--workers", str(workers)),
            *flags,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/v1/recipes", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "hub serve did not answer in 90 s"
                time.sleep(0.3)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
