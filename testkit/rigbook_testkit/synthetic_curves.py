"""Known load curves for the synthetic server, so that a capacity search has a true answer to find.

A curve says how fast each stream goes, how long its first token takes and whether it is
refused at all, as functions of ``n``, the streams in flight (this one included):

- ``hyperbolic``: ``rate / (1 + falloff·(n−1))``, a server whose batch shares one budget;
- ``linear``: ``rate · (1 − falloff·(n−1))``, never below ``floor`` of it;
- ``cliff``: ``rate`` up to ``knee`` streams, ``rate · drop`` past it (one more user breaks it);
- ``table``: ``table[n−1]`` tok/s, its last value past its end (a curve with a dip, say).

TTFT is ``ttft_s + ttft_per_user_s·(n−1)``, plus ``spike_ttft_s`` for a request drawn, with
probability ``spike_rate``, from the seeded generator (a rare slow first token). With ``linger_s``
a request whose client hung up still counts as in flight that long, as an engine that frees a
cancelled request's slot late. With ``fail_above`` set, a request that would make
more than that many streams is refused with HTTP 503. ``noise`` gives every request its own
rate factor, ``exp(N(0, noise))`` from a seeded generator, as a noisy server would.

``users_at`` is the true answer a search should find; ``python -m
rigbook_testkit.synthetic_server --curve '{"shape": "cliff", "knee": 12}'`` serves a curve.
"""

from __future__ import annotations

import math
import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Curve(BaseModel):
    """One known curve (see the module docstring for the shapes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shape: Literal["hyperbolic", "linear", "cliff", "table"] = "hyperbolic"
    rate_tok_s: float = Field(default=200.0, gt=0, description="Per-stream rate with one stream.")
    falloff: float = Field(default=0.25, ge=0)
    floor: float = Field(
        default=0.05, gt=0, le=1, description="linear: lowest fraction of the rate."
    )
    knee: int = Field(default=8, ge=1, description="cliff: most streams at the full rate.")
    drop: float = Field(
        default=0.3, gt=0, le=1, description="cliff: fraction of the rate past the knee."
    )
    table: list[float] = Field(
        default_factory=list, description="table: per-stream tok/s at 1, 2, … streams."
    )
    ttft_s: float = Field(default=0.03, ge=0)
    ttft_per_user_s: float = Field(default=0.0, ge=0)
    spike_rate: float = Field(default=0.0, ge=0, le=1, description="Share of slow first tokens.")
    spike_ttft_s: float = Field(default=0.0, ge=0, description="What a slow first token adds.")
    linger_s: float = Field(
        default=0.0, ge=0, description="In flight this long after its client hung up."
    )
    fail_above: int | None = Field(default=None, ge=1, description="Refuse past this many streams.")
    noise: float = Field(
        default=0.0, ge=0, description="Sd of the log of each request's rate factor."
    )
    seed: int = 0

    def rate(self, n: int) -> float:
        """Tokens per second of each stream when ``n`` are in flight."""
        k = max(n, 1) - 1
        if self.shape == "hyperbolic":
            return self.rate_tok_s / (1.0 + self.falloff * k)
        if self.shape == "linear":
            return self.rate_tok_s * max(1.0 - self.falloff * k, self.floor)
        if self.shape == "table":
            return self.table[min(k, len(self.table) - 1)] if self.table else self.rate_tok_s
        return self.rate_tok_s if n <= self.knee else self.rate_tok_s * self.drop

    def ttft(self, n: int) -> float:
        """Seconds to the first token for a request that makes ``n`` streams."""
        return self.ttft_s + self.ttft_per_user_s * (max(n, 1) - 1)

    def spike(self, rng: random.Random) -> float:
        """Seconds one request's first token is late by: ``spike_ttft_s`` with probability
        ``spike_rate`` (no draw without spikes, so other curves' noise stays as it was)."""
        if not self.spike_rate:
            return 0.0
        return self.spike_ttft_s if rng.random() < self.spike_rate else 0.0

    def refuses(self, n: int) -> bool:
        """True when a request that would make ``n`` streams is refused."""
        return self.fail_above is not None and n > self.fail_above

    def factors(self) -> random.Random:
        """The seeded generator of per-request rate factors."""
        return random.Random(self.seed)

    def factor(self, rng: random.Random) -> float:
        """One request's rate factor (1.0 without noise)."""
        return math.exp(rng.gauss(0.0, self.noise)) if self.noise else 1.0

    def users_at(
        self, min_rate: float | None = None, max_ttft_s: float | None = None, limit: int = 4096
    ) -> int:
        """The true answer: most streams at which every stream gets ``min_rate`` and its first
        token within ``max_ttft_s`` (spikes left out), and none is refused."""
        best = 0
        for n in range(1, limit + 1):
            if (
                self.refuses(n)
                or (min_rate is not None and self.rate(n) < min_rate)
                or (max_ttft_s is not None and self.ttft(n) > max_ttft_s)
            ):
                break
            best = n
        return best
