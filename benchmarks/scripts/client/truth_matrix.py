"""Each client's figures against the synthetic server's own record: idle, beside a busy loop,
and with its event loop stalled mid-stream.

For each client (``python``, ``compiled`` where built), each stream count and each condition (an
otherwise idle machine; one busy loop in a process of its own beside it; a 300 ms block of the
client's event loop half a second into the cell), one cell of ``--streams`` requests; the
server's record is the truth: its aggregate (tokens ÷ last token sent − first request received by
the kernel), the median of its per-request rates (tokens after the first ÷ first to last send)
and its median TTFT as a client should see it (first send − kernel receipt of the request).
Printed per cell: the client's error on each, and which figures the client's own judgement
marked (``marked``): an error above 1 % should be marked.

    python benchmarks/scripts/client/truth_matrix.py --streams 1,4,32 --rate 200 --tokens 400

This is where the client's accuracy against a live server is measured: the tests assert counts,
codes and identities on the client's own stamps, never a wall-clock rate within a percentage
(a loaded machine moves those). ``--model synthetic-final`` (usage only at the end),
``--tokens-per-chunk``, ``--falloff`` and ``--workers`` cover the shapes the tests once checked
within 1 %; ``--duration`` measures sustained windows instead of bursts (its truth assumes one
token an event at an even pace: ``--tokens-per-chunk 1 --falloff 0``).

The load average is printed before and after: on a shared machine the figures move with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from compare_clients import REPO, _with_repo

from rigbook_testkit.launch import start_synthetic

TOLERANCE_PCT = 1.0
CONDITIONS = ("nothing", "busy loop", "stalled loop")
STALL_AFTER_S, STALL_S = 0.5, 0.3


def _in_window(served: dict, lo: float, hi: float) -> int:
    """Tokens the server sent inside [lo, hi]: one an event, evenly paced."""
    n, first, last = served["tokens"], served["first_send"], served["last_send"]
    if not n:
        return 0
    step = (last - first) / (n - 1) if n > 1 else 0.0
    return sum(1 for k in range(n) if lo <= first + k * step <= hi)


def _truth(url: str, window_s: float | None) -> dict[str, float]:
    own = [r for r in httpx.get(url + "/_record").json()["requests"] if r["tokens"]]
    done = [r for r in own if r["completed"]] or own
    if window_s is None:
        span = max(r["last_send"] for r in own) - min(r["received"] for r in own)
        aggregate = sum(r["tokens"] for r in own) / span
    else:
        # The window opens as the first request goes out: on the server's clock (the same
        # CLOCK_MONOTONIC), at its first arrival.
        lo = min(r["arrival"] for r in own)
        aggregate = sum(_in_window(r, lo, lo + window_s) for r in own) / window_s
    return {
        "aggregate_tok_s": aggregate,
        "per_request_decode_tok_s": statistics.median(r["decode_tok_s"] for r in done),
        "ttft_ms": 1000.0 * statistics.median(r["ttft_received_s"] for r in own),
    }


def _stall_once():
    """A progress callback that blocks the client's event loop once, mid-stream."""
    stalled: list[bool] = []

    def progress(event: str, data: dict) -> None:
        if event == "cell" and not stalled:
            stalled.append(True)
            asyncio.get_running_loop().call_later(STALL_AFTER_S, time.sleep, STALL_S)

    return progress


def _cell(url: str, client: str, streams: int, args: argparse.Namespace, out: Path, stall: bool):
    from rigbook.bench.measure import MeasureRequest, measure

    request = MeasureRequest(
        url=url,
        model=args.model,
        concurrency=[streams],
        max_tokens=args.tokens,
        warmup=0,
        client=client,
        telemetry=False,
        out=out,
        workers=args.workers,
        **({"duration_s": args.duration} if args.duration else {"requests": streams}),
    )
    cell = measure(request, None, _stall_once() if stall else None).result.cells[0]
    got = {
        "aggregate_tok_s": cell.metrics.aggregate_tok_s,
        "per_request_decode_tok_s": cell.metrics.per_request_decode_tok_s.p50,
        "ttft_ms": cell.metrics.ttft_ms.p50,
    }
    marked = set(cell.client.marked) if cell.client else set()
    return {"got": got, "marked": marked, "valid": cell.valid, "window_s": cell.metrics.window_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="1,4", help="stream counts, comma-separated")
    ap.add_argument("--rate", type=float, default=200.0, help="tok/s per stream")
    ap.add_argument("--tokens", type=int, default=400, help="tokens per reply")
    ap.add_argument("--ttft-s", type=float, default=0.05, help="the server's first-token wait")
    ap.add_argument("--model", default="synthetic", help="synthetic, synthetic-final, ...")
    ap.add_argument("--tokens-per-chunk", type=int, default=1, help="tokens an event carries")
    ap.add_argument("--falloff", type=float, default=0.0, help="the server's slow-down per stream")
    ap.add_argument("--workers", type=int, default=None, help="client worker processes")
    ap.add_argument("--duration", type=float, default=None, help="sustained window, seconds")
    args = ap.parse_args()
    if args.duration and (args.tokens_per_chunk != 1 or args.falloff):
        ap.error("--duration's truth needs --tokens-per-chunk 1 --falloff 0")
    os.environ["PYTHONPATH"] = _with_repo()
    sys.path.insert(0, str(REPO))
    from rigbook.bench import compiled

    clients = ["python", "compiled"] if compiled.available() else ["python"]
    streams = [int(s) for s in args.streams.split(",")]
    print(f"load average before: {os.getloadavg()}", flush=True)
    server, url = start_synthetic(
        "--rate",
        str(args.rate),
        "--falloff",
        str(args.falloff),
        "--tokens-per-chunk",
        str(args.tokens_per_chunk),
        "--ttft-s",
        str(args.ttft_s),
        show_stderr=True,
    )
    names = ["aggregate_tok_s", "per_request_decode_tok_s", "ttft_ms"]
    print(
        f"{'beside':<12} {'client':<9} {'streams':>7}  "
        + "  ".join(f"{n + ' err %':>30}" for n in names)
        + "  unmarked past 1 %"
    )
    missed = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for condition in CONDITIONS:
                busy = condition == "busy loop"
                loop = (
                    subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
                )
                try:
                    for client in clients:
                        for n in streams:
                            httpx.post(url + "/_reset")
                            out = Path(tmp) / f"{client}-{n}-{CONDITIONS.index(condition)}.json"
                            stall = condition == "stalled loop"
                            cell = _cell(url, client, n, args, out, stall)
                            truth = _truth(url, cell["window_s"] if args.duration else None)
                            cols, unmarked = [], []
                            for name in names:
                                value = cell["got"][name]
                                if value is None:
                                    cols.append(f"{'-':>30}")
                                    continue
                                err = 100.0 * (value - truth[name]) / truth[name]
                                mark = " (marked)" if name in cell["marked"] else ""
                                cols.append(f"{f'{err:+.2f}{mark}':>30}")
                                if abs(err) > TOLERANCE_PCT and not mark:
                                    unmarked.append(name)
                            missed += bool(unmarked)
                            print(
                                f"{condition:<12} {client:<9} {n:>7}  "
                                + "  ".join(cols)
                                + f"  {', '.join(unmarked) or '-'}",
                                flush=True,
                            )
                finally:
                    if loop is not None:
                        loop.kill()
                        loop.wait()
    finally:
        server.terminate()
        server.wait(10)
    print(f"cells with a figure off by more than 1 % and unmarked: {missed}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
