"""GPU telemetry during a bench: NVML behind a thin reader, sampled in a background thread.

The sampler reads each GPU's power draw, SM and memory clocks, temperature and
throttle reasons at about 10 Hz, and the total-energy counter (millijoules) at
each cell's window edges, so energy is the counter difference rather than an
integral of sampled power. Per-card figures and totals carry different names
(``power_limit_w`` of one card, ``power_draw_w_total_mean`` over cards).

The sampler takes any :class:`GpuReader`: the test kit's replay (``rigbook_testkit``, outside the
wheel) serves committed H200 samples through the same sampler and summary code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rigbook.bench.metrics import distribution
from rigbook.bench.result import CellTelemetry, GpuCellTelemetry, GpuRunTelemetry, RunTelemetry


@dataclass
class Sample:
    """One reading of one GPU; any field NVML could not give is None."""

    t: float
    power_w: float | None = None
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    temp_c: float | None = None
    throttle: tuple[str, ...] = ()


class GpuReader(Protocol):
    """What the sampler needs from NVML."""

    source: str

    def gpu_count(self) -> int: ...
    def name(self, i: int) -> str | None: ...
    def power_limit_w(self, i: int) -> float | None: ...
    def sample(self, i: int) -> Sample: ...
    def energy_mj(self, i: int) -> float | None: ...


# NVML clocks-event (throttle) reason bits, by their names in nvml.h
_THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def throttle_names(mask: int) -> tuple[str, ...]:
    """Names of the bits set in an NVML throttle-reason mask."""
    return tuple(name for bit, name in _THROTTLE_BITS.items() if mask & bit)


class NvmlReader:
    """The live reader: pynvml. Construct through :func:`open_reader`."""

    source = "nvml"

    def __init__(self, nvml) -> None:
        self._n = nvml
        self._handles = [
            nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())
        ]

    def _try(self, fn: Callable, *args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - any NVML error means "not available" for that field
            return None

    def gpu_count(self) -> int:
        return len(self._handles)

    def name(self, i: int) -> str | None:
        n = self._try(self._n.nvmlDeviceGetName, self._handles[i])
        return n.decode() if isinstance(n, bytes) else n

    def power_limit_w(self, i: int) -> float | None:
        mw = self._try(self._n.nvmlDeviceGetEnforcedPowerLimit, self._handles[i])
        return None if mw is None else mw / 1000.0

    def sample(self, i: int) -> Sample:
        h, n = self._handles[i], self._n
        power = self._try(n.nvmlDeviceGetPowerUsage, h)
        mask = self._try(n.nvmlDeviceGetCurrentClocksThrottleReasons, h)
        return Sample(
            t=time.time(),
            power_w=None if power is None else power / 1000.0,
            sm_mhz=self._try(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
            mem_mhz=self._try(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
            temp_c=self._try(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
            throttle=throttle_names(mask or 0),
        )

    def energy_mj(self, i: int) -> float | None:
        return self._try(self._n.nvmlDeviceGetTotalEnergyConsumption, self._handles[i])


def open_reader() -> tuple[GpuReader | None, str | None]:
    """The NVML reader, or None and why telemetry is unavailable."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no library, no driver, no GPU: all "unavailable"
        return None, f"NVML unavailable: {type(exc).__name__}: {exc}"
    reader = NvmlReader(pynvml)
    if reader.gpu_count() == 0:
        return None, "NVML found no GPUs on this machine"
    return reader, None


class Sampler:
    """Collects samples per GPU; cells mark their window edges with :meth:`begin` and :meth:`end`."""

    def __init__(
        self, reader: GpuReader | None, unavailable: str | None = None, interval_s: float = 0.1
    ) -> None:
        self.reader, self.unavailable, self.interval_s = reader, unavailable, interval_s
        n = reader.gpu_count() if reader else 0
        self._samples: list[list[Sample]] = [[] for _ in range(n)]
        self._names = [reader.name(i) for i in range(n)] if reader else []
        self._limits = [reader.power_limit_w(i) for i in range(n)] if reader else []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cell_start: tuple[int, list[float | None], float] | None = None
        self._run_energy: list[float] = [0.0] * n

    def sample_once(self) -> None:
        """Take one sample of every GPU (the thread's body; tests call it directly)."""
        if not self.reader:
            return
        readings = [self.reader.sample(i) for i in range(len(self._samples))]
        with self._lock:
            for buf, s in zip(self._samples, readings, strict=True):
                buf.append(s)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample_once()

    def start(self) -> None:
        if self.reader and self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="rigbook-telemetry", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)

    def _now(self) -> float:
        clock = getattr(self.reader, "clock", None)
        return clock() if clock else time.time()

    def begin(self) -> None:
        """Open a cell's window: note where the samples are and read the energy counters."""
        if not self.reader:
            return
        self.sample_once()
        with self._lock:
            pos = len(self._samples[0]) - 1
        self._cell_start = (
            pos,
            [self.reader.energy_mj(i) for i in range(len(self._samples))],
            self._now(),
        )

    def end(self) -> CellTelemetry:
        """Close the window and summarise it per card and in total."""
        if not self.reader or self._cell_start is None:
            return CellTelemetry(
                available=False, reason=self.unavailable or "telemetry was not started"
            )
        self.sample_once()
        pos, e0, t0 = self._cell_start
        e1 = [self.reader.energy_mj(i) for i in range(len(self._samples))]
        t1 = self._now()
        self._cell_start = None
        gpus = []
        with self._lock:
            windows = [buf[pos:] for buf in self._samples]
        for i, win in enumerate(windows):
            mj_start, mj_end = e0[i], e1[i]
            energy = (
                (mj_end - mj_start) / 1000.0
                if mj_start is not None and mj_end is not None
                else None
            )
            if energy is not None:
                self._run_energy[i] += energy
            gpus.append(
                GpuCellTelemetry(
                    index=i,
                    name=self._names[i],
                    power_limit_w=self._limits[i],
                    samples=len(win),
                    power_draw_w=distribution([s.power_w for s in win if s.power_w is not None]),
                    sm_clock_mhz=distribution([s.sm_mhz for s in win if s.sm_mhz is not None]),
                    mem_clock_mhz=distribution([s.mem_mhz for s in win if s.mem_mhz is not None]),
                    temperature_c=distribution([s.temp_c for s in win if s.temp_c is not None]),
                    throttle_reasons=sorted({r for s in win for r in s.throttle}),
                    energy_j=energy,
                )
            )
        means = [g.power_draw_w.mean for g in gpus if g.power_draw_w.mean is not None]
        energies = [g.energy_j for g in gpus if g.energy_j is not None]
        return CellTelemetry(
            available=True,
            window_s=t1 - t0,
            gpus=gpus,
            power_limit_w_per_gpu=list(self._limits),
            # A total only when every card has its figure.
            power_draw_w_total_mean=sum(means) if len(means) == len(gpus) else None,
            energy_j_total=sum(energies) if len(energies) == len(gpus) else None,
        )

    def run_summary(self) -> RunTelemetry:
        """Per card and total over every cell measured so far."""
        if not self.reader:
            return RunTelemetry(available=False, reason=self.unavailable)
        return RunTelemetry(
            available=True,
            source=self.reader.source,
            gpus=[
                GpuRunTelemetry(
                    index=i,
                    name=self._names[i],
                    power_limit_w=self._limits[i],
                    energy_j=self._run_energy[i],
                )
                for i in range(len(self._samples))
            ],
            power_limit_w_per_gpu=list(self._limits),
            energy_j_total=sum(self._run_energy),
        )
