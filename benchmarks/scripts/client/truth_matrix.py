"""Each client's figures against the synthetic server's own record, idle and beside a busy loop.

For each client (``python``, ``compiled`` where built), each stream count and each condition (an
otherwise idle machine, then one busy loop in a process of its own beside it), one burst cell of
``--streams`` requests; the server's record is the truth: its aggregate (tokens ÷ last token sent
− first request received by the kernel), the median of its per-request rates (tokens after the
first ÷ first to last send) and its median TTFT as a client should see it (first send − kernel
receipt of the request). Printed per cell: the client's error on each, and which figures the
client's own judgement marked (``marked``): an error above 1 % should be marked.

    python benchmarks/scripts/client/truth_matrix.py --streams 1,4 --rate 200 --tokens 400

The load average is printed before and after: on a shared machine the figures move with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from compare_clients import REPO, _with_repo

from rigbook_testkit.launch import start_synthetic

TOLERANCE_PCT = 1.0


def _truth(url: str) -> dict[str, float]:
    own = [r for r in httpx.get(url + "/_record").json()["requests"] if r["tokens"]]
    span = max(r["last_send"] for r in own) - min(r["received"] for r in own)
    return {
        "aggregate_tok_s": sum(r["tokens"] for r in own) / span,
        "per_request_decode_tok_s": statistics.median(r["decode_tok_s"] for r in own),
        "ttft_ms": 1000.0 * statistics.median(r["ttft_received_s"] for r in own),
    }


def _cell(url: str, client: str, streams: int, tokens: int, out: Path) -> dict:
    from rigbook.bench.measure import MeasureRequest, measure

    request = MeasureRequest(
        url=url,
        model="synthetic",
        concurrency=[streams],
        requests=streams,
        max_tokens=tokens,
        warmup=0,
        client=client,
        telemetry=False,
        out=out,
    )
    cell = measure(request).result.cells[0]
    got = {
        "aggregate_tok_s": cell.metrics.aggregate_tok_s,
        "per_request_decode_tok_s": cell.metrics.per_request_decode_tok_s.p50,
        "ttft_ms": cell.metrics.ttft_ms.p50,
    }
    marked = set(cell.client.marked) if cell.client else set()
    return {"got": got, "marked": marked, "valid": cell.valid}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="1,4", help="stream counts, comma-separated")
    ap.add_argument("--rate", type=float, default=200.0, help="tok/s per stream")
    ap.add_argument("--tokens", type=int, default=400, help="tokens per reply")
    ap.add_argument("--ttft-s", type=float, default=0.05, help="the server's first-token wait")
    args = ap.parse_args()
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
        "0",
        "--tokens-per-chunk",
        "1",
        "--ttft-s",
        str(args.ttft_s),
        show_stderr=True,
    )
    names = ["aggregate_tok_s", "per_request_decode_tok_s", "ttft_ms"]
    print(
        f"{'beside':<10} {'client':<9} {'streams':>7}  "
        + "  ".join(f"{n + ' err %':>30}" for n in names)
        + "  unmarked past 1 %"
    )
    missed = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for busy in (False, True):
                loop = (
                    subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
                )
                try:
                    for client in clients:
                        for n in streams:
                            httpx.post(url + "/_reset")
                            out = Path(tmp) / f"{client}-{n}-{int(busy)}.json"
                            cell = _cell(url, client, n, args.tokens, out)
                            truth = _truth(url)
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
                                f"{'busy loop' if busy else 'nothing':<10} {client:<9} {n:>7}  "
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
