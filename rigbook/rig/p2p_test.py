"""The functional peer-access test: copy a buffer both ways between GPU pairs, verify it, time it.

Uses PyTorch, else CuPy, whichever is importable; with neither, the result says
it was skipped and why. Neither is a dependency of rigbook: the test runs where
the engine's own environment provides one.
"""

from __future__ import annotations

import time
from typing import Any

from rigbook.rig.model import P2PCopy, P2PTest

_MIB = 1024 * 1024


def run_p2p_test(pairs: list[tuple[int, int]], size_mib: int = 256, repeats: int = 5) -> P2PTest:
    """Copy ``size_mib`` MiB from a to b and back for each pair ``(a, b)``; verify and measure GB/s each way."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        if not torch.cuda.is_available():
            return P2PTest(
                backend="torch",
                size_mib=size_mib,
                skipped=f"PyTorch {torch.__version__} sees no CUDA device",
            )
        return P2PTest(
            backend="torch",
            size_mib=size_mib,
            pairs=[_guarded(_torch_pair, torch, a, b, size_mib, repeats) for a, b in pairs],
        )
    try:
        import cupy
    except ImportError:
        return P2PTest(size_mib=size_mib, skipped="neither PyTorch nor CuPy is importable")
    return P2PTest(
        backend="cupy",
        size_mib=size_mib,
        pairs=[_guarded(_cupy_pair, cupy, a, b, size_mib, repeats) for a, b in pairs],
    )


def _guarded(fn: Any, lib: Any, a: int, b: int, size_mib: int, repeats: int) -> P2PCopy:
    try:
        return fn(lib, a, b, size_mib, repeats)
    except Exception as exc:  # noqa: BLE001 - any CUDA failure is this pair's result
        return P2PCopy(a=a, b=b, verified=False, error=f"{type(exc).__name__}: {exc}")


def _gbps(n_bytes: int, repeats: int, seconds: float) -> float:
    return round(n_bytes * repeats / seconds / 1e9, 2) if seconds > 0 else 0.0


def _torch_pair(torch: Any, a: int, b: int, size_mib: int, repeats: int) -> P2PCopy:
    n = size_mib * _MIB // 4
    src = torch.arange(n, dtype=torch.int32, device=f"cuda:{a}")

    def timed(x: Any, dst: int) -> tuple[Any, float]:
        y = x.to(f"cuda:{dst}")  # warm-up, and the copy that is verified
        torch.cuda.synchronize(x.device)
        torch.cuda.synchronize(dst)
        start = time.perf_counter()
        for _ in range(repeats):
            x.to(f"cuda:{dst}")
        torch.cuda.synchronize(x.device)
        torch.cuda.synchronize(dst)
        return y, time.perf_counter() - start

    there, t_ab = timed(src, b)
    back, t_ba = timed(there, a)
    return P2PCopy(
        a=a,
        b=b,
        verified=bool(torch.equal(back, src)),
        peer_access=torch.cuda.can_device_access_peer(a, b),
        gbps_a_to_b=_gbps(n * 4, repeats, t_ab),
        gbps_b_to_a=_gbps(n * 4, repeats, t_ba),
    )


def _cupy_pair(cupy: Any, a: int, b: int, size_mib: int, repeats: int) -> P2PCopy:
    rt = cupy.cuda.runtime
    n_bytes = size_mib * _MIB
    with cupy.cuda.Device(a):
        src = cupy.arange(n_bytes // 4, dtype=cupy.int32)
        back = cupy.empty_like(src)
    with cupy.cuda.Device(b):
        there = cupy.empty_like(src)

    def timed(dst: Any, dst_dev: int, x: Any, x_dev: int) -> float:
        rt.memcpyPeer(
            dst.data.ptr, dst_dev, x.data.ptr, x_dev, n_bytes
        )  # warm-up, and the copy that is verified
        cupy.cuda.Device(x_dev).synchronize()
        cupy.cuda.Device(dst_dev).synchronize()
        start = time.perf_counter()
        for _ in range(repeats):
            rt.memcpyPeer(dst.data.ptr, dst_dev, x.data.ptr, x_dev, n_bytes)
        cupy.cuda.Device(x_dev).synchronize()
        cupy.cuda.Device(dst_dev).synchronize()
        return time.perf_counter() - start

    t_ab = timed(there, b, src, a)
    t_ba = timed(back, a, there, b)
    with cupy.cuda.Device(a):
        verified = bool(cupy.array_equal(back, src))
    return P2PCopy(
        a=a,
        b=b,
        verified=verified,
        peer_access=bool(rt.deviceCanAccessPeer(a, b)),
        gbps_a_to_b=_gbps(n_bytes, repeats, t_ab),
        gbps_b_to_a=_gbps(n_bytes, repeats, t_ba),
    )
