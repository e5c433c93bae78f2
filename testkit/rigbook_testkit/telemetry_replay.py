"""Recorded NVML telemetry samples (``tests/fixtures/rigs/*.energy-under-load.json``) served as if
live, behind the bench sampler's reader interface (:class:`rigbook.bench.telemetry.GpuReader`), so
the sampler and its summary are tested on a machine without a GPU."""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable
from pathlib import Path

from rigbook.bench.telemetry import Sample


class ReplayReader:
    """Serves recorded samples (the rig fixtures' format) as if live; ``clock`` picks the moment."""

    def __init__(
        self,
        samples: list[dict],
        *,
        name: str,
        power_limit_w: float | None,
        clock: Callable[[], float],
        source: str,
    ) -> None:
        self._s = sorted(samples, key=lambda s: s["t"])
        self._t = [s["t"] for s in self._s]
        self._name, self._limit, self.clock, self.source = name, power_limit_w, clock, source

    @classmethod
    def from_fixture(
        cls,
        path: Path,
        *,
        clock: Callable[[], float],
        name: str = "NVIDIA H200",
        power_limit_w: float | None = 700.0,
    ) -> ReplayReader:
        data = json.loads(Path(path).read_text())
        return cls(
            data["samples"],
            name=name,
            power_limit_w=power_limit_w,
            clock=clock,
            source=f"replay:{Path(path).name}",
        )

    def gpu_count(self) -> int:
        return 1

    def name(self, i: int) -> str | None:
        return self._name

    def power_limit_w(self, i: int) -> float | None:
        return self._limit

    def _at(self, t: float) -> dict:
        k = max(bisect.bisect_right(self._t, t) - 1, 0)
        return self._s[k]

    def sample(self, i: int) -> Sample:
        now = self.clock()
        s = self._at(now)
        return Sample(t=now, power_w=s["power_mw"] / 1000.0, sm_mhz=s.get("sm_mhz"))

    def energy_mj(self, i: int) -> float | None:
        # The counter between two readings is linear in time: interpolate as NVML would have read it.
        t = self.clock()
        k = bisect.bisect_right(self._t, t)
        if k <= 0:
            return float(self._s[0]["energy_mj"])
        if k >= len(self._s):
            return float(self._s[-1]["energy_mj"])
        a, b = self._s[k - 1], self._s[k]
        return a["energy_mj"] + (b["energy_mj"] - a["energy_mj"]) * (t - a["t"]) / (b["t"] - a["t"])
