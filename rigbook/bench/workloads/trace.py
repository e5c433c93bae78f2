"""Request traces: read them, and replay them at their own arrival times.

Two layouts are read (``layout="auto"`` tells them apart by the first row's fields):

- ``mooncake``: JSON Lines as Mooncake publishes its traces, one request a line:
  ``timestamp`` (ms from the trace start), ``input_length``, ``output_length`` and ``hash_ids``,
  the ids of the prompt's blocks of :data:`MOONCAKE_BLOCK_TOKENS` tokens (two requests that share
  a block id share those tokens).
- ``plain``: CSV with a header row, or JSON Lines, with ``at_s`` (seconds from the trace start),
  ``input_tokens``, ``output_tokens`` and optionally ``hash_ids`` (in CSV, ids split by spaces).

A row that cannot be read is ``E_TRACE`` naming its line. The replay (:func:`replay`) sends each
request at its planned time divided by ``speed`` and measures how late it went out (the schedule
lag); it runs on any :class:`Clock`, so tests drive it with a scripted one.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import math
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from rigbook.errors import InputError
from rigbook.findings import Finding

# Mooncake's traces hash the prompt in blocks of this many tokens.
MOONCAKE_BLOCK_TOKENS = 512

Layout = Literal["auto", "mooncake", "plain"]


class TraceRequest(BaseModel):
    """One request of a trace."""

    model_config = ConfigDict(frozen=True)

    at_s: float = Field(ge=0, description="Planned send time, seconds from the trace's start.")
    input_tokens: int = Field(ge=1, description="Prompt length in the server's tokens.")
    output_tokens: int = Field(ge=1, description="Reply length in tokens (held).")
    hash_ids: tuple[int, ...] = Field(
        default=(), description="Ids of the prompt's blocks; a shared id is shared text."
    )
    line: int = Field(description="Line of the trace file the request came from.")


class Trace(BaseModel):
    """A whole trace, sorted by planned time, with what identifies it."""

    model_config = ConfigDict(frozen=True)

    source: str
    layout: Literal["mooncake", "plain"]
    block_tokens: int
    sha256: str = Field(description="sha256 of the trace file's bytes.")
    requests: tuple[TraceRequest, ...]

    @property
    def span_s(self) -> float:
        """Seconds from the first planned send to the last, at speed 1."""
        return self.requests[-1].at_s - self.requests[0].at_s if self.requests else 0.0


def _bad(source: str, line: int, what: str) -> InputError:
    return InputError(
        "E_TRACE",
        f"{source} line {line}: {what}",
        "Fix or drop that row; docs/bench.md lists the trace layouts and their fields.",
    )


def _int(row: dict, key: str, source: str, line: int, minimum: int) -> int:
    if key not in row or row[key] in (None, ""):
        raise _bad(source, line, f"{key} is missing")
    value = row[key]
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(source, line, f"{key} {value!r} is not a number") from None
    if not number.is_integer() or number < minimum:
        raise _bad(source, line, f"{key} {value!r} is not a whole number >= {minimum}")
    return int(number)


def _time(row: dict, key: str, scale: float, source: str, line: int) -> float:
    if key not in row or row[key] in (None, ""):
        raise _bad(source, line, f"{key} is missing")
    value = row[key]
    try:
        number = float(value) * scale
    except (TypeError, ValueError):
        raise _bad(source, line, f"{key} {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise _bad(source, line, f"{key} {value!r} is not a time >= 0")
    return number


def _hash_ids(value: object, source: str, line: int) -> tuple[int, ...]:
    if value in (None, ""):
        return ()
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list):
        raise _bad(source, line, f"hash_ids {value!r} is not a list of block ids")
    try:
        return tuple(int(x) for x in items)
    except (TypeError, ValueError):
        raise _bad(
            source, line, f"hash_ids {value!r} holds a block id that is not an integer"
        ) from None


def _row(row: dict, layout: Literal["mooncake", "plain"], block: int, source: str, line: int):
    if layout == "mooncake":
        at = _time(row, "timestamp", 0.001, source, line)
        inp = _int(row, "input_length", source, line, 1)
        out = _int(row, "output_length", source, line, 1)
    else:
        at = _time(row, "at_s", 1.0, source, line)
        inp = _int(row, "input_tokens", source, line, 1)
        out = _int(row, "output_tokens", source, line, 1)
    ids = _hash_ids(row.get("hash_ids"), source, line)
    if len(ids) > math.ceil(inp / block):
        raise _bad(
            source,
            line,
            f"{len(ids)} hash_ids cover more than the {inp} input tokens "
            f"({math.ceil(inp / block)} blocks of {block})",
        )
    return TraceRequest(at_s=at, input_tokens=inp, output_tokens=out, hash_ids=ids, line=line)


def parse_trace(
    data: bytes, source: str, layout: Layout = "auto", block_tokens: int | None = None
) -> Trace:
    """A trace from a file's bytes; ``source`` names it in errors. ``block_tokens`` defaults to
    Mooncake's 512."""
    block = block_tokens or MOONCAKE_BLOCK_TOKENS
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("E_TRACE", f"{source} is not UTF-8 text: {exc}") from None
    rows: list[tuple[int, dict]] = []
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.lstrip().startswith("{"):
        for number, ln in enumerate(text.splitlines(), start=1):
            if not ln.strip():
                continue
            try:
                value = json.loads(ln)
            except json.JSONDecodeError as exc:
                raise _bad(source, number, f"not JSON: {exc.msg}") from None
            if not isinstance(value, dict):
                raise _bad(source, number, "not a JSON object")
            rows.append((number, value))
    else:
        reader = csv.DictReader(io.StringIO(text))
        for value in reader:
            # The header is line 1; a row's line is where the reader ended it.
            rows.append((reader.line_num, value))
    if not rows:
        raise InputError("E_TRACE", f"{source} holds no requests")
    if layout == "auto":
        layout = "mooncake" if "timestamp" in rows[0][1] else "plain"
    requests = [_row(row, layout, block, source, number) for number, row in rows]
    # Sorted by planned time; rows of one time keep their file order.
    requests.sort(key=lambda r: r.at_s)
    return Trace(
        source=source,
        layout=layout,
        block_tokens=block,
        sha256=hashlib.sha256(data).hexdigest(),
        requests=tuple(requests),
    )


def read_trace(path: Path, layout: Layout = "auto", block_tokens: int | None = None) -> Trace:
    """A trace file (see :func:`parse_trace`)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError("E_TRACE", f"cannot read trace {path}: {exc.strerror}") from None
    return parse_trace(data, str(path), layout, block_tokens)


class Clock(Protocol):
    """Where the replay reads the time and waits."""

    def now(self) -> float: ...

    async def sleep_until(self, t: float) -> None: ...


class PerfClock:
    """The real clock: ``time.perf_counter``, the one the bench client stamps with."""

    def now(self) -> float:
        return time.perf_counter()

    async def sleep_until(self, t: float) -> None:
        delay = t - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)


class Sent(BaseModel):
    """When one replayed request was planned and when it went out, on the replay's clock."""

    index: int
    planned: float
    sent: float

    @property
    def lag_s(self) -> float:
        """How late it went out (0 when on time)."""
        return max(0.0, self.sent - self.planned)


async def replay(
    times_s: Sequence[float],
    send: Callable[[int], Coroutine[Any, Any, None]],
    *,
    speed: float = 1.0,
    clock: Clock | None = None,
    stop: asyncio.Event | None = None,
    on_sent: Callable[[Sent], None] | None = None,
) -> list[Sent]:
    """Send request ``i`` at ``times_s[i] / speed`` after the replay starts (``times_s`` sorted,
    from 0), never waiting for earlier requests to end; returns when every send has ended.
    Each request's send time is read just before it is handed to ``send``: its lag is how late
    that is against the plan. ``stop`` ends the replay: no more sends, those in flight cancelled."""
    if speed <= 0:
        raise ValueError("speed must be > 0")
    clock = clock or PerfClock()
    stop = stop or asyncio.Event()
    start = clock.now()
    origin = times_s[0] if times_s else 0.0
    sent: list[Sent] = []
    tasks: list[asyncio.Task] = []
    for i, at in enumerate(times_s):
        planned = start + (at - origin) / speed
        await clock.sleep_until(planned)
        if stop.is_set():
            break
        record = Sent(index=i, planned=planned, sent=clock.now())
        sent.append(record)
        if on_sent is not None:
            on_sent(record)
        tasks.append(asyncio.create_task(send(i)))
    if tasks:
        everything = asyncio.gather(*tasks, return_exceptions=True)
        stopper = asyncio.create_task(stop.wait())
        waiters: set[asyncio.Future[Any]] = {everything, stopper}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not everything.done():
            for t in tasks:
                t.cancel()
        await asyncio.gather(everything, return_exceptions=True)
    return sent


class ScheduleLag(BaseModel):
    """How late a replay's requests went out against their planned times."""

    requests: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    limit_ms: float = Field(description="The p99 lag past which the cell is flagged W_TRACE_LAG.")
    late: bool = Field(description="p99 lag above limit_ms.")
    speed: float


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` (0..1) percentile by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def schedule_lag(sent: Sequence[Sent], *, limit_ms: float, speed: float) -> ScheduleLag | None:
    """The lag of the requests that went out, or None when none did."""
    lags = [1000.0 * s.lag_s for s in sent]
    if not lags:
        return None
    p99 = percentile(lags, 0.99)
    return ScheduleLag(
        requests=len(lags),
        p50_ms=percentile(lags, 0.5),
        p99_ms=p99,
        max_ms=max(lags),
        limit_ms=limit_ms,
        late=p99 > limit_ms,
        speed=speed,
    )


class TraceReplay(BaseModel):
    """What a trace cell replayed and how faithfully."""

    source: str = Field(description="The trace file.")
    sha256: str = Field(description="sha256 of the trace file's bytes.")
    layout: str
    block_tokens: int
    speed: float = Field(description="Arrival times were divided by this.")
    requests_planned: int
    requests_sent: int
    lag: ScheduleLag | None = Field(
        default=None, description="How late requests went out against the plan; None: none did."
    )
    planned_s: list[float] = Field(
        default_factory=list,
        description="Each sent request's planned time, seconds from the replay's start.",
    )
    lag_ms: list[float] = Field(default_factory=list, description="Each sent request's lag.")
    prompt_tokens_exact: int = Field(
        description="Requests whose prompt the engine counted at the trace's input length."
    )
    prompt_tokens_counted: int = Field(description="Requests whose response counted the prompt.")
    chat_template_tokens: int = Field(
        description="Tokens the chat template adds around a message, taken off each prompt."
    )


def lag_warning(lag: ScheduleLag, cell: int) -> Finding | None:
    """The cell's W_TRACE_LAG when its p99 lag is past the limit."""
    if not lag.late:
        return None
    return Finding.make(
        "W_TRACE_LAG",
        f"cell {cell}: requests went out late against the trace (lag p99 {lag.p99_ms:.1f} ms, "
        f"limit {lag.limit_ms:.0f} ms, max {lag.max_ms:.1f} ms): the server saw a gentler "
        "arrival pattern than the trace's",
    )


def replay_lines(cells: Sequence[Any]) -> list[str]:
    """One line per trace cell for the terminal: its schedule lag and how many prompts were exact."""
    lines = []
    for cell in cells:
        replay: TraceReplay | None = getattr(cell, "trace", None)
        if replay is None:
            continue
        lag = replay.lag
        said = (
            f"lag p50 {lag.p50_ms:.2f} ms, p99 {lag.p99_ms:.2f} ms, max {lag.max_ms:.2f} ms "
            f"(limit {lag.limit_ms:g} ms)"
            if lag is not None
            else "no request went out"
        )
        lines.append(
            f"cell {cell.index}: {replay.requests_sent} of {replay.requests_planned} requests at "
            f"speed {replay.speed:g}; {said}; {replay.prompt_tokens_exact} of "
            f"{replay.prompt_tokens_counted} prompts at the trace's exact length"
        )
    return lines
