"""Probes start on an idle server: before each probe, wait until the server's own counters show
no request in flight.

An engine may go on working on a request its client dropped (llama-server holds a cancelled
task's slot for a while): a probe started then would share the server with the last probe's
leftovers and read slower than it is. The counters read are the engine's own: the Prometheus
gauges of vLLM (``vllm:num_requests_running`` and ``_waiting``), SGLang and llama-server, or
llama-server's ``/slots``. A server with none of them gets a fixed wait after a probe that was
stopped early (a probe that ran to its end left nothing behind). Every wait is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from typing import Literal

import httpx
from pydantic import BaseModel, Field

from rigbook.openai.http import tls_context

# Gauges of requests an engine holds: running and queued, summed over their label sets.
IN_FLIGHT_GAUGES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_POLL_S = 0.05

Source = Literal["metrics", "slots", "none"]


class Drain(BaseModel):
    """One wait for an idle server, as recorded with the probe that followed it."""

    waited_s: float = Field(description="Seconds waited before the probe began.")
    source: str | None = Field(
        description="What was read: '/metrics NAME+NAME', '/slots', or None (no counter: a fixed "
        "wait after a probe stopped early)."
    )
    in_flight: int | None = Field(
        default=None, description="Requests the server held when the wait began."
    )
    idle: bool | None = Field(
        default=None,
        description="The counters showed none in flight before drain_timeout_s (None: no counter).",
    )


def in_flight_from_metrics(text: str) -> tuple[str, int] | None:
    """The in-flight gauges in a Prometheus text exposition: (their names, their sum), or None
    when it has none of them."""
    names: list[str] = []
    total = 0.0
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1) in IN_FLIGHT_GAUGES:
            try:
                total += float(m.group(3))
            except ValueError:
                continue
            if m.group(1) not in names:
                names.append(m.group(1))
    return ("/metrics " + "+".join(names), round(total)) if names else None


def in_flight_from_slots(data: object) -> int | None:
    """Busy slots in llama-server's ``/slots`` answer (``is_processing``, or a non-zero ``state``
    in older versions); None when it is not a list of slots."""
    if not isinstance(data, list) or not all(isinstance(s, dict) for s in data):
        return None
    busy = 0
    for slot in data:
        if "is_processing" in slot:
            busy += bool(slot["is_processing"])
        elif "state" in slot:
            busy += slot["state"] not in (0, "idle")
        else:
            return None
    return busy


async def _pause(seconds: float, stop: asyncio.Event) -> None:
    """Sleep ``seconds``, or less when ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


class IdleWait:
    """Waits for an idle server at ``url`` before each probe; finds which counter it has once."""

    def __init__(self, url: str, drain_s: float, timeout_s: float) -> None:
        self.url, self.drain_s, self.timeout_s = url.rstrip("/"), drain_s, timeout_s
        self.source: Source | None = None

    async def _read(self, client: httpx.AsyncClient) -> tuple[str, int] | None:
        if self.source in (None, "metrics"):
            try:
                r = await client.get(self.url + "/metrics")
                found = in_flight_from_metrics(r.text) if r.status_code == 200 else None
            except httpx.HTTPError:
                found = None
            if found is not None:
                self.source = "metrics"
                return found
        if self.source in (None, "slots"):
            try:
                r = await client.get(self.url + "/slots")
                busy = in_flight_from_slots(r.json()) if r.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                busy = None
            if busy is not None:
                self.source = "slots"
                return "/slots", busy
        if self.source is None:
            self.source = "none"
        return None

    async def __call__(self, after_stopped: bool, stop: asyncio.Event | None = None) -> Drain:
        """Wait until the server holds no request (at most ``timeout_s``); with no counter, wait
        ``drain_s`` when the last probe was stopped early, else not at all. Setting ``stop`` (the
        run's Ctrl-C) ends the wait at once."""
        stop = stop or asyncio.Event()
        start = time.monotonic()
        async with httpx.AsyncClient(timeout=5.0, verify=tls_context()) as client:
            first = await self._read(client)
            if first is None:
                if after_stopped:
                    await _pause(self.drain_s, stop)
                return Drain(waited_s=time.monotonic() - start, source=None)
            source, busy = first
            reading: tuple[str, int] | None = first
            while reading is not None and reading[1] > 0 and not stop.is_set():
                if time.monotonic() - start >= self.timeout_s:
                    break
                await _pause(_POLL_S, stop)
                reading = await self._read(client)
        return Drain(
            waited_s=time.monotonic() - start,
            source=source,
            in_flight=busy,
            idle=reading is not None and reading[1] == 0,
        )
