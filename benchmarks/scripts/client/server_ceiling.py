"""How many tokens a second the synthetic server emits on this machine, read by a cheap reader.

For each server process count and tokens per SSE event, a fresh synthetic server
(``rigbook_testkit.synthetic_server``, no TTFT, no falloff) is offered ``--streams`` paced streams.
Each stream asks for ``--rate`` × tokens-per-event tok/s, so every setting offers the same number
of events a second and only the tokens each event carries change. The readers are
``--readers`` processes of raw non-blocking sockets that send the request, drain the reply and
open the next stream when one ends; they parse nothing, so the server, not the reader, is the
limit.

The figure is the server's own count (``GET /_sent``, summed over its processes) over a window
after a warm-up: tokens sent per second and stream writes per second. Events per write is 1.00
while the server keeps each stream's pace; above 1 it fell behind and sent the events already due
in one write (the server's catch-up), so tokens still flow but no longer one event per write.
Beside it: the server's CPU (µs per token, share of a core) and the readers', and the machine's
load average before and after (the machine is shared, and every figure moves with it).

    python benchmarks/scripts/client/server_ceiling.py --processes 1,2 --tokens-per-event 1,4,16
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import httpx

from rigbook_testkit.launch import start_synthetic

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Ceiling:
    """One server setting, measured over one window."""

    processes: int
    tokens_per_event: int
    offered_tok_s: float
    tok_s: float
    writes_s: float
    server_cpu_s: float
    reader_cpu_s: float
    window_s: float

    @property
    def events_per_write(self) -> float:
        return self.tok_s / self.tokens_per_event / self.writes_s if self.writes_s else 0.0

    @property
    def server_us_per_token(self) -> float:
        return 1e6 * self.server_cpu_s / (self.tok_s * self.window_s) if self.tok_s else 0.0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and of its live children (the server's workers)."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                # Fields after the command name, which is in parentheses and may hold spaces.
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a process that ended since the listing
        if int(entry) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def sent(url: str) -> tuple[float, float]:
    got = httpx.get(url + "/_sent").json()
    return got["tokens"], got["writes"]


def read_streams(
    port: int, streams: int, max_tokens: int, window: tuple[float, float], poll_s: float
) -> float:
    """Keep ``streams`` replies open, draining their bytes every ``poll_s``, until shortly after
    the window (two ``time.monotonic`` marks, the same clock in every process); returns this
    reader's CPU seconds inside the window."""
    body = (
        b'{"model":"synthetic","stream":true,"max_tokens":%d,'
        b'"messages":[{"role":"user","content":"ceiling"}]}' % max_tokens
    )
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    sel = selectors.DefaultSelector()

    def open_stream() -> None:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(request)
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ)

    for _ in range(streams):
        open_stream()
    cpu: dict[float, float] = {}  # the reader's CPU time at the first pass after each mark
    while (now := time.monotonic()) < window[1] + 0.5:
        for mark in window:
            if now >= mark:
                cpu.setdefault(mark, time.process_time())
        for key, _ in sel.select(timeout=0.1):
            sock = key.fileobj
            if not sock.recv(1 << 20):  # type: ignore[union-attr]
                # The server closes after each reply: the next stream takes its place.
                sel.unregister(sock)
                sock.close()  # type: ignore[union-attr]
                open_stream()
        # The kernel holds what arrives meanwhile: one read then takes several events, which
        # keeps the reader's CPU per token small beside the server's.
        time.sleep(poll_s)
    for key in list(sel.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    return cpu[window[1]] - cpu[window[0]]


def measure(processes: int, tokens_per_event: int, args: argparse.Namespace) -> Ceiling:
    """One server setting: warm up, then count what the server sent over the window."""
    proc, url = start_synthetic(
        "--rate",
        str(args.rate * tokens_per_event),
        "--falloff",
        "0",
        "--ttft-s",
        "0",
        "--tokens-per-chunk",
        str(tokens_per_event),
        "--processes",
        str(processes),
        show_stderr=True,
    )
    port = int(url.rsplit(":", 1)[1])
    # A stream lasts about a second, so the window sees streams end and new ones connect.
    max_tokens = int(args.rate * tokens_per_event)
    start = time.monotonic() + args.warmup_s
    window = (start, start + args.window_s)
    per_reader = -(-args.streams // args.readers)
    try:
        with ProcessPoolExecutor(args.readers) as pool:
            readers = [
                pool.submit(read_streams, port, per_reader, max_tokens, window, args.poll_ms / 1e3)
                for _ in range(args.readers)
            ]
            time.sleep(max(window[0] - time.monotonic(), 0.0))
            tokens0, writes0, cpu0, t0 = *sent(url), cpu_s(proc.pid), time.monotonic()
            time.sleep(max(window[1] - time.monotonic(), 0.0))
            tokens1, writes1, cpu1, t1 = *sent(url), cpu_s(proc.pid), time.monotonic()
            reader_cpu = sum(r.result() for r in readers)
    finally:
        proc.terminate()
        proc.wait(10)
    return Ceiling(
        processes=processes,
        tokens_per_event=tokens_per_event,
        offered_tok_s=per_reader * args.readers * args.rate * tokens_per_event,
        tok_s=(tokens1 - tokens0) / (t1 - t0),
        writes_s=(writes1 - writes0) / (t1 - t0),
        server_cpu_s=cpu1 - cpu0,
        reader_cpu_s=reader_cpu,
        window_s=t1 - t0,
    )


def load() -> str:
    return "{:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    """Measure each setting and print one table, with the load average before and after."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", default="1,2", help="server processes (comma-separated)")
    ap.add_argument("--tokens-per-event", default="1,4,16", help="tokens per SSE event")
    ap.add_argument("--streams", type=int, default=512, help="streams open at once")
    ap.add_argument(
        "--rate", type=float, default=200.0, help="events a second each stream asks for"
    )
    ap.add_argument("--readers", type=int, default=2, help="reader processes")
    ap.add_argument("--poll-ms", type=float, default=20.0, help="a reader's pause between reads")
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--window-s", type=float, default=5.0)
    args = ap.parse_args(argv)
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)", flush=True)
    lines = [
        "| server processes | tokens per event | offered tok/s | emitted tok/s | events per write "
        "| server CPU µs/token | server CPU | readers' CPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for processes in (int(x) for x in args.processes.split(",")):
        for per_event in (int(x) for x in args.tokens_per_event.split(",")):
            c = measure(processes, per_event, args)
            lines.append(
                f"| {processes} | {per_event} | {c.offered_tok_s:,.0f} | {c.tok_s:,.0f} | "
                f"{c.events_per_write:.2f} | {c.server_us_per_token:.2f} | "
                f"{100 * c.server_cpu_s / c.window_s:.0f} % | "
                f"{100 * c.reader_cpu_s / c.window_s:.0f} % |"
            )
            print(lines[-1], flush=True)
    print(f"load average after: {load()}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
