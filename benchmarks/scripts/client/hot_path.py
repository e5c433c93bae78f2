"""Where a streamed token's client CPU goes: the hot path built up one step at a time.

Each step streams the same replies from one synthetic server (its own process, one token per
SSE event) over ``--streams`` connections and does a little more with every read than the step
before, up to rigbook's own client with its stall monitor. The CPU the process spent while the
streams ran, divided by the tokens, is the step's cost; the difference between two steps is what
that step adds. The first step, which only counts reads, is the floor of any client that reads
each event as it arrives (one wake of the process per read), whatever it does with the bytes.
Step ``c-read`` is the same in C (``c_reader.c``, compiled here with ``cc`` when there is one):
the kernel's share of a read, which no client in any language avoids. Step ``c-parse`` is what a
client compiled in C would cost: headers, chunked body, SSE, a scan of each event for its token
and usage, a timestamp per token, and a stall watch without a timer (each read's kernel receive
stamp); its token count is checked against what was asked for.

    python benchmarks/scripts/client/hot_path.py --streams 64 --rate 40 --repeat 3

The machine's load average is printed before and after: the figures move with it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httptools
import orjson
import uvloop

from rigbook.bench.client import ReadWatch, Target, stream_chat
from rigbook.bench.scheduler import ClientMonitor
from rigbook.openai.body import encode
from rigbook.openai.stream import RawRequest
from rigbook_testkit.launch import start_synthetic


class _Reads(asyncio.Protocol):
    """Step ``read``: counts reads and nothing else."""

    def __init__(self, request: bytes, done: asyncio.Future) -> None:
        self.request, self.done, self.reads = request, done, 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self.reads += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.done.set_result(None)


class _Stamps(_Reads):
    """Step ``timestamp``: + one clock read per read, kept in an array."""

    def __init__(self, request: bytes, done: asyncio.Future) -> None:
        super().__init__(request, done)
        self.times = array("d")

    def data_received(self, data: bytes) -> None:
        self.times.append(time.perf_counter())


class _Http(_Stamps):
    """Step ``http``: + the HTTP/1.1 reply parsed by httptools (chunked body decoded)."""

    def __init__(self, request: bytes, done: asyncio.Future) -> None:
        super().__init__(request, done)
        self.parser = httptools.HttpResponseParser(self)

    def data_received(self, data: bytes) -> None:
        self.times.append(time.perf_counter())
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        pass


class _Sse(_Http):
    """Step ``sse``: + the body split into SSE events on bytes."""

    def __init__(self, request: bytes, done: asyncio.Future) -> None:
        super().__init__(request, done)
        self.pending = b""

    def on_body(self, body: bytes) -> None:
        buf = self.pending + body if self.pending else body
        start = 0
        while (end := buf.find(b"\n\n", start)) >= 0:
            self.event(buf[start:end])
            start = end + 2
        self.pending = buf[start:]

    def event(self, event: bytes) -> None:
        pass


class _Json(_Sse):
    """Step ``json``: + each event's JSON parsed by orjson."""

    def event(self, event: bytes) -> None:
        if event != b"data: [DONE]":
            orjson.loads(event[6:])


STEPS: dict[str, type[_Reads] | None] = {
    "c-read": None,  # c_reader.c, its own process
    "c-parse": None,  # c_reader.c in parse mode
    "read": _Reads,
    "timestamp": _Stamps,
    "http": _Http,
    "sse": _Sse,
    "json": _Json,
    "rigbook": None,  # rigbook's client.stream_chat
    "rigbook+monitor": None,  # the same with the cell's stall monitor ticking
}


async def _stream(step: str, target: Target, body: bytes, reads: ReadWatch) -> None:
    protocol = STEPS[step]
    if protocol is None:
        await stream_chat(target, body, 60.0, RawRequest(), reads=reads)
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    request = target.request_bytes(body)
    await loop.create_connection(lambda: protocol(request, done), target.host, target.port)
    await done


async def _run_step(step: str, url: str, streams: int, tokens: int) -> float:
    """CPU seconds the process spent while ``streams`` replies of ``tokens`` tokens streamed."""
    target = Target(url)
    body = encode(
        {
            "model": "synthetic",
            "messages": [{"role": "user", "content": "Count."}],
            "max_tokens": tokens,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
    )
    reads = ReadWatch()
    monitor = ClientMonitor(reads) if step == "rigbook+monitor" else None
    gc.collect()
    cpu0 = time.process_time()
    if monitor is not None:
        monitor.start()
    jobs: list[Coroutine[Any, Any, None]] = [
        _stream(step, target, body, reads) for _ in range(streams)
    ]
    await asyncio.gather(*jobs)
    if monitor is not None:
        await monitor.stop()
    return time.process_time() - cpu0


def _c_read(url: str, streams: int, tokens: int, build: Path, mode: str) -> float | None:
    """CPU seconds of ``c_reader.c`` in ``mode`` (read or parse) over the same streams; None
    without a C compiler."""
    binary = build / "c_reader"
    if not binary.exists():
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            return None
        source = Path(__file__).with_name("c_reader.c")
        subprocess.run([compiler, "-O2", "-o", str(binary), str(source)], check=True)
    port = url.rsplit(":", 1)[1]
    out = subprocess.run(
        [str(binary), port, str(streams), str(tokens), mode],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fields = dict(item.split("=", 1) for item in out.split())
    if mode == "parse" and int(fields["events"]) != streams * tokens:
        raise SystemExit(f"c-parse counted {fields['events']} tokens of {streams * tokens}: {out}")
    return float(fields["cpu_s"])


def _load() -> str:
    return "load average {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--rate", type=float, default=40.0, help="per-stream tok/s")
    ap.add_argument("--tokens", type=int, default=200, help="tokens per reply")
    ap.add_argument("--repeat", type=int, default=3, help="runs per step; the median is printed")
    ap.add_argument("--steps", default=",".join(STEPS), help="which steps, in order")
    args = ap.parse_args(argv)
    proc, url = start_synthetic(
        *f"--rate {args.rate:g} --falloff 0 --tokens-per-chunk 1 --ttft-s 0.03".split(),
        show_stderr=True,
    )
    print(f"{_load()} before; {args.streams} streams x {args.rate:g} tok/s, 1 token per event")
    build = Path(tempfile.mkdtemp(prefix="rigbook-hot-path-"))

    def run(step: str) -> float | None:
        if step.startswith("c-"):
            return _c_read(url, args.streams, args.tokens, build, step.removeprefix("c-"))
        return uvloop.run(_run_step(step, url, args.streams, args.tokens))

    try:
        run("read")  # the first connections pay one-time costs: not a step's
        before = 0.0
        for step in args.steps.split(","):
            runs = [run(step) for _ in range(args.repeat)]
            cpus = [cpu for cpu in runs if cpu is not None]
            if not cpus:
                print(f"{step:16s}      - (no C compiler)", flush=True)
                continue
            us = 1e6 * statistics.median(cpus) / (args.streams * args.tokens)
            print(f"{step:16s} {us:6.1f} µs/token  (+{us - before:5.1f})", flush=True)
            before = us
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(build, ignore_errors=True)
    print(f"{_load()} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
