"""What the bench's worker processes and the parent say to each other (rigbook.bench.workers).

Plain frozen dataclasses, pickled over a ``multiprocessing.connection.Connection``: a worker's
finished request travels as :class:`PackedRaw`, its arrays as bytes, one message per request and
never one per token. Timestamps are ``time.perf_counter()`` in every process; :func:`check_clock`
makes sure that is the machine's one ``CLOCK_MONOTONIC`` before any is sent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from rigbook.bench.backend import RequestBodies
from rigbook.bench.result import ClientLoad
from rigbook.errors import InternalError
from rigbook.openai.stream import RawRequest

# perf_counter and CLOCK_MONOTONIC read back to back differ by less than this when they are one
# clock (float rounding of the same nanoseconds); two clocks differ by their epochs.
CLOCK_TOLERANCE_S = 0.001


def check_clock() -> float:
    """``time.perf_counter()`` now, after making sure it reads ``CLOCK_MONOTONIC``: the clock every
    process of the machine shares. Elsewhere workers' times would not merge: fail loudly."""
    before = time.perf_counter()
    mono = time.clock_gettime(time.CLOCK_MONOTONIC)
    after = time.perf_counter()
    if not before - CLOCK_TOLERANCE_S <= mono <= after + CLOCK_TOLERANCE_S:
        raise InternalError(
            "E_INTERNAL",
            f"time.perf_counter() ({before:.6f}) is not CLOCK_MONOTONIC ({mono:.6f}) here, so "
            "worker processes' timestamps would not merge",
            "Run with --workers 1 on this platform.",
        )
    return after


@dataclass(frozen=True, slots=True)
class PackedRaw:
    """A :class:`RawRequest` on its way from a worker to the parent: its arrays as bytes."""

    sent: float
    done: float | None
    times: bytes
    usage: bytes
    reasoning: bytes
    final_usage: dict | None
    continuous: bool
    finish_reason: str | None
    error: str | None
    prompt_tokens: int | None
    reasoning_tokens_reported: int | None
    draft_tokens: int | None
    draft_accepted: int | None
    cancelled: bool
    reads: int

    @classmethod
    def pack(cls, raw: RawRequest) -> PackedRaw:
        """``raw`` as a message."""
        return cls(
            sent=raw.sent,
            done=raw.done,
            times=raw.times.tobytes(),
            usage=raw.usage.tobytes(),
            reasoning=bytes(raw.reasoning),
            final_usage=raw.final_usage,
            continuous=raw.continuous,
            finish_reason=raw.finish_reason,
            error=raw.error,
            prompt_tokens=raw.prompt_tokens,
            reasoning_tokens_reported=raw.reasoning_tokens_reported,
            draft_tokens=raw.draft_tokens,
            draft_accepted=raw.draft_accepted,
            cancelled=raw.cancelled,
            reads=raw.reads,
        )

    def unpack(self) -> RawRequest:
        """The request as the worker saw it."""
        raw = RawRequest(sent=self.sent)
        raw.times.frombytes(self.times)
        raw.usage.frombytes(self.usage)
        raw.reasoning.extend(self.reasoning)
        raw.done, raw.final_usage, raw.continuous = self.done, self.final_usage, self.continuous
        raw.finish_reason, raw.error, raw.prompt_tokens = (
            self.finish_reason,
            self.error,
            self.prompt_tokens,
        )
        raw.reasoning_tokens_reported = self.reasoning_tokens_reported
        raw.draft_tokens, raw.draft_accepted = self.draft_tokens, self.draft_accepted
        raw.cancelled, raw.reads = self.cancelled, self.reads
        return raw


# Parent to worker.
@dataclass(frozen=True, slots=True)
class WorkerSetup:
    """What a worker needs for the whole run; ``clock`` is the parent's perf_counter at spawn."""

    worker: int
    url: str
    bodies: RequestBodies
    stall_s: float
    clock: float
    client: Literal["compiled", "python"] = "python"


@dataclass(frozen=True, slots=True)
class BurstOrder:
    """Stream ``indices`` (in this order), ``lanes`` at a time."""

    lanes: int
    indices: list[int]


@dataclass(frozen=True, slots=True)
class SustainedOrder:
    """Keep ``lanes`` streams busy until ``end`` (perf_counter); the k-th request is numbered
    ``first + k * step`` so no two workers use one number."""

    lanes: int
    end: float
    first: int
    step: int


@dataclass(frozen=True, slots=True)
class StopCell:
    """End the cell now: drop the streams in flight and report."""


@dataclass(frozen=True, slots=True)
class Quit:
    """Leave: the run is over."""


# Worker to parent.
@dataclass(frozen=True, slots=True)
class Ready:
    """The worker is up; ``clock`` is its perf_counter, which must fall between the parent's
    reading at spawn and at receipt (one clock across processes)."""

    pid: int
    clock: float


@dataclass(frozen=True, slots=True)
class Started:
    """Request ``index`` is going out."""

    index: int


@dataclass(frozen=True, slots=True)
class Finished:
    """Request ``index`` ended (or was cut at the window's end)."""

    index: int
    raw: PackedRaw


@dataclass(frozen=True, slots=True)
class CellDone:
    """Every stream of the cell has ended; what the worker's client did meanwhile."""

    load: ClientLoad


@dataclass(frozen=True, slots=True)
class Crashed:
    """The worker hit an error of its own and is leaving."""

    reason: str


ToParent = Ready | Started | Finished | CellDone | Crashed
Order = BurstOrder | SustainedOrder
