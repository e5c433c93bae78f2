"""Issue 18 item 8 on a real GPU: rigbook's P2P copy test and the live NvmlReader, with output as JSON.

The P2P test copies between every pair of GPUs; on a one-GPU machine there is no pair, so it also
runs the same code on the pair (0, 0) (a copy within the card) to show the torch path works here.
The live NvmlReader is read before, during and after two seconds of matrix products: the energy
counter's rise is checked against mean power x time.
"""

import dataclasses
import json
import sys
import threading
import time

import torch

from rigbook.bench.telemetry import open_reader
from rigbook.rig.p2p_test import run_p2p_test

out: dict = {"torch": torch.__version__, "gpus": torch.cuda.device_count()}
pairs = [(a, b) for a in range(out["gpus"]) for b in range(a + 1, out["gpus"])]
out["p2p_pairs"] = run_p2p_test(pairs).model_dump(mode="json")
out["p2p_same_card"] = run_p2p_test([(0, 0)]).model_dump(mode="json")

reader, why = open_reader()
if reader is None:
    out["nvml"] = {"unavailable": why}
else:
    nvml = {"count": reader.gpu_count(), "name": reader.name(0), "power_limit_w": reader.power_limit_w(0),
            "idle": dataclasses.asdict(reader.sample(0))}
    busy = threading.Event()

    def load() -> None:
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        while not busy.is_set():
            a @ a
        torch.cuda.synchronize()

    e0, t0 = reader.energy_mj(0), time.monotonic()
    worker = threading.Thread(target=load)
    worker.start()
    samples = []
    while time.monotonic() - t0 < 2.0:
        samples.append(reader.sample(0))
        time.sleep(0.1)
    busy.set()
    worker.join()
    e1, t1 = reader.energy_mj(0), time.monotonic()
    watts = [s.power_w for s in samples if s.power_w is not None]
    nvml.update(busy_samples=len(samples), busy_first=dataclasses.asdict(samples[0]), busy_last=dataclasses.asdict(samples[-1]),
                busy_mean_power_w=round(sum(watts) / len(watts), 1) if watts else None,
                energy_j=round((e1 - e0) / 1000, 1) if e0 is not None and e1 is not None else None,
                seconds=round(t1 - t0, 2))
    if nvml["energy_j"] and nvml["busy_mean_power_w"]:
        nvml["energy_vs_power_x_time_pct"] = round(100 * nvml["energy_j"] / (nvml["busy_mean_power_w"] * (t1 - t0)), 1)
    out["nvml"] = nvml
json.dump(out, sys.stdout, indent=2, default=str)
print()
