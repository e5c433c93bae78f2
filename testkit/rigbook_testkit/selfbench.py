"""Benchmark of the bench client itself (`make bench-client`).

A command of the repository, not of the product: no rigbook command runs it, so it lives in the
test kit beside the synthetic server it measures against.

Runs the synthetic server as its own process, one token per event (the worst
case: one SSE event per token), at several concurrency levels. Prints, per level,
the streamed rate, the worst per-request and the aggregate error against the
server's own record, the client's CPU time per token, how far its measured lag could have
moved the rates and which figures it marked, then the ceiling of one client process (1e6 / µs per token), that of the
worker processes the levels used (``--workers N``: N times it), and the highest rate the client
ingested within 1% without being flagged client_bound.
The machine's load average is printed before and after: on a shared machine the
figures move with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import get_args

import httpx
from rich import box
from rich.console import Console
from rich.table import Table

from rigbook.bench.clients import ClientChoice
from rigbook.bench.measure import MeasureRequest, measure
from rigbook_testkit.launch import start_synthetic, stop

TOLERANCE = 0.01


# The marked figures as one letter each, for the table (its legend is printed under it).
_SHORT = {
    "aggregate_tok_s": "a",
    "per_request_decode_tok_s": "r",
    "ttft_ms": "t",
    "itl_ms_worst_p99": "i",
}


def _level(
    url: str, conc: int, tokens: int, out: Path, workers: int | None, client: ClientChoice
) -> dict:
    httpx.post(url + "/_reset")
    request = MeasureRequest(
        url=url,
        model="synthetic",
        concurrency=[conc],
        requests=conc,
        max_tokens=tokens,
        warmup=0,
        out=out,
        telemetry=False,
        workers=workers,
        client=client,
    )
    result = measure(request).result
    cell = result.cells[0]
    own = httpx.get(url + "/_record").json()["requests"]
    server_rates = sorted(r["decode_tok_s"] for r in own)
    client_rates = sorted(r.decode_tok_s for r in cell.requests if r.decode_tok_s)
    per_req_err = max(
        (abs(c - s) / s for c, s in zip(client_rates, server_rates, strict=False)), default=1.0
    )
    if len(client_rates) != len(server_rates):
        per_req_err = 1.0
    server_agg = sum(r["tokens"] for r in own) / (
        max(r["last_send"] for r in own) - min(r["arrival"] for r in own)
    )
    agg_err = abs(cell.metrics.aggregate_tok_s - server_agg) / server_agg
    load = cell.client
    assert load is not None, "run_bench measures every cell's client load"
    return {
        "concurrency": conc,
        "workers": load.workers or 1,
        "server_aggregate": server_agg,
        "client_aggregate": cell.metrics.aggregate_tok_s,
        "server_per_request_median": statistics.median(server_rates),
        "per_request_err": per_req_err,
        "aggregate_err": agg_err,
        "cpu_us_per_token": load.cpu_us_per_token,
        # With workers, what the bench process spent receiving and recording, per token.
        "parent_us_per_token": (
            load.parent_cpu_s * load.cpu_us_per_token / load.cpu_s
            if load.parent_cpu_s is not None and load.cpu_us_per_token and load.cpu_s
            else None
        ),
        "cpu_fraction": load.cpu_fraction,
        "client": load.timestamps or "loop",
        # How far the client could have moved the rates (see judge_client), and what it marked.
        "rate_moved": max(
            (v for v in (load.moved.aggregate_tok_s, load.moved.per_request_decode_tok_s) if v),
            default=0.0,
        )
        if load.moved
        else None,
        "marked": "".join(_SHORT.get(name, name) for name in load.marked) or "-",
        "valid": cell.valid,
        "client_bound": cell.client_bound,
        "server_count_ok": cell.server is not None and not cell.server.mismatch,
        # A client_bound cell never becomes a perf point, so it cannot count as headroom either.
        "ok": cell.valid
        and not cell.client_bound
        and per_req_err <= TOLERANCE
        and agg_err <= TOLERANCE,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Measure the bench client's headroom against the synthetic server."
    )
    ap.add_argument(
        "--rate",
        type=float,
        default=40.0,
        help="per-request tok/s the server streams (40 x 64 streams = the 2,400 tok/s of issue 16)",
    )
    ap.add_argument(
        "--tokens",
        type=int,
        default=1000,
        help="tokens per reply (long, so connection set-up weighs little in the aggregate)",
    )
    ap.add_argument("--levels", default="1,4,16,64,256", help="concurrency levels")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument(
        "--workers",
        type=int,
        default=None,
        help="client processes per level (default: rigbook bench's, one per 256 streams)",
    )
    ap.add_argument(
        "--client",
        choices=get_args(ClientChoice),
        default="auto",
        help="which client streams the requests (default: rigbook bench's)",
    )
    args = ap.parse_args(argv)
    server, url = start_synthetic(
        *(
            "--rate",
            str(args.rate),
            "--falloff",
            "0",
            "--tokens-per-chunk",
            "1",
            "--ttft-s",
            "0.03",
        ),
        port=args.port or None,
    )
    console = Console()
    console.print(f"machine load before: {_load()}")
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for conc in (int(x) for x in args.levels.split(",")):
                row = _level(
                    url, conc, args.tokens, Path(tmp) / f"c{conc}.json", args.workers, args.client
                )
                rows.append(row)
                parent = row["parent_us_per_token"]
                console.print(
                    f"concurrency {conc}: server {row['server_aggregate']:.0f} tok/s, "
                    f"{row['cpu_us_per_token']:.1f} µs/token"
                    + (f" (+ {parent:.1f} in the parent)" if parent is not None else "")
                    + f", aggregate err {row['aggregate_err']:.3%}"
                )
    finally:
        stop(server)
    table = Table(
        title=f"bench client vs synthetic server ({args.rate:g} tok/s per request, 1 token per "
        f"event; {rows[0]['client']} timestamps)",
        box=box.SIMPLE_HEAD,
        padding=0,
        show_edge=False,
    )
    for col in (
        "C",
        "W",
        "server\ntok/s",
        "client\ntok/s",
        "per-req\nerr",
        "agg\nerr",
        "CPU µs\n/token",
        "CPU",
        "rates\nmoved",
        "marked",
        "client\nbound",
        "counts",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(
            str(r["concurrency"]),
            str(r["workers"]),
            f"{r['server_aggregate']:.0f}",
            f"{r['client_aggregate']:.0f}",
            f"{r['per_request_err']:.3%}",
            f"{r['aggregate_err']:.3%}",
            f"{r['cpu_us_per_token']:.1f}",
            f"{r['cpu_fraction']:.0%}",
            "-" if r["rate_moved"] is None else f"{r['rate_moved']:.3%}",
            r["marked"],
            "yes" if r["client_bound"] else "no",
            "yes" if r["ok"] else "no",
        )
    console.print(table)
    console.print("marked: a aggregate, r per-request rate, t TTFT, i worst per-token gap p99")
    console.print(f"machine load after: {_load()}")
    cheapest = min(rows, key=lambda r: r["cpu_us_per_token"])
    # One core spends 1e6 µs a second: at this cost per token it could take in no more than this.
    one = 1e6 / cheapest["cpu_us_per_token"]
    print(
        f"ceiling of one client process: {one:.0f} tok/s "
        f"(1e6 / {cheapest['cpu_us_per_token']:.1f} µs per token, at concurrency {cheapest['concurrency']})"
    )
    # N processes on N free CPUs: N times one, each at the cost per token measured.
    n = max(r["workers"] for r in rows)
    if n > 1:
        print(f"ceiling of {n} client processes: {n * one:.0f} tok/s")
    good = [r for r in rows if r["ok"]]
    best = max(good, key=lambda r: r["server_aggregate"]) if good else None
    if best:
        print(
            f"highest streamed rate within 1% and not client_bound: {best['server_aggregate']:.0f} tok/s "
            f"(concurrency {best['concurrency']}, {best['cpu_us_per_token']:.1f} µs client CPU per token)"
        )
    else:
        print("no level stayed within 1% without being client_bound")
    return 0 if best else 1


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


if __name__ == "__main__":
    sys.exit(main())
