"""An experiment, not rigbook's client: read on a paced poll and take arrival times from the kernel.

`hot_path.py` shows the floor of a client that reads each event as it arrives: one wake-up of the
process per read. This script tries the way under that floor. The process wakes every
``--period-ms`` whatever the number of streams, reads every socket that has data, and takes each
read's arrival time from the kernel (``SO_TIMESTAMPNS``: the time the newest packet of that read
arrived) instead of from the clock at the read, so waking late does not move a timestamp. What it
cannot know is the arrival of an event that shares a read with a later one: those reads are
counted ("reads holding more than one event"), and their earlier events take the read's time.

It prints, per stream count, the CPU µs per token (parsing each event with ``orjson``, as the
``json`` step of ``hot_path.py`` does), the share of reads that held more than one event, and each
stream's decode rate against the synthetic server's own record (worst error), beside the load.

    python benchmarks/scripts/client/paced_poll.py --streams 64,256 --rate 40 --period-ms 2
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import struct
import sys
import time

import httptools
import httpx
import orjson

from rigbook_testkit.launch import start_synthetic

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
ANCILLARY = socket.CMSG_SPACE(16)


class Stream:
    """One reply read by the poll: its arrival times (perf_counter) of token-bearing events."""

    def __init__(self, sock: socket.socket, request: bytes) -> None:
        self.sock, self.times, self.pending = sock, [], b""
        self.parser = httptools.HttpResponseParser(self)
        self.now = 0.0
        self.done = False
        self.shared_reads = self.reads = 0
        self._events_in_read = 0
        sock.sendall(request)

    def read(self, offset: float) -> None:
        """Drain what the socket holds; ``offset`` turns the kernel's realtime stamp into perf_counter."""
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(262144, ANCILLARY)
            except BlockingIOError:
                return
            if not data:
                self.done = True
                return
            sec, nsec = struct.unpack("qq", anc[0][2][:16]) if anc else (0, 0)
            self.now = sec + nsec * 1e-9 - offset if anc else time.perf_counter()
            self._events_in_read = 0
            self.parser.feed_data(data)
            self.reads += 1
            self.shared_reads += self._events_in_read > 1

    def on_body(self, body: bytes) -> None:
        buf = self.pending + body
        start = 0
        while (end := buf.find(b"\n\n", start)) >= 0:
            event = buf[start + 6 : end]
            start = end + 2
            if event != b"[DONE]":
                data = orjson.loads(event)
                if data.get("choices") and data["choices"][0].get("delta", {}).get("content"):
                    self.times.append(self.now)
                    self._events_in_read += 1
        self.pending = buf[start:]


def run(url: str, streams: int, tokens: int, period_s: float) -> dict:
    host, port = url.rsplit("/", 1)[-1].split(":")
    body = orjson.dumps(
        {
            "model": "synthetic",
            "messages": [{"role": "user", "content": "Count."}],
            "max_tokens": tokens,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
    )
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: "
        f"application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    httpx.post(url + "/_reset")
    poll = select.epoll()
    open_streams: dict[int, Stream] = {}
    cpu0 = time.process_time()
    for _ in range(streams):
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.setblocking(False)
        open_streams[sock.fileno()] = Stream(sock, request)
        poll.register(sock.fileno(), select.EPOLLIN)
    finished: list[Stream] = []
    while open_streams:
        time.sleep(period_s)
        offset = time.clock_gettime(time.CLOCK_REALTIME) - time.perf_counter()
        for fd, _ in poll.poll(0):
            stream = open_streams[fd]
            stream.read(offset)
            if stream.done:
                poll.unregister(fd)
                stream.sock.close()
                finished.append(open_streams.pop(fd))
    cpu = time.process_time() - cpu0
    own = httpx.get(url + "/_record").json()["requests"]
    truth = sorted(r["decode_tok_s"] for r in own)
    mine = sorted((len(s.times) - 1) / (s.times[-1] - s.times[0]) for s in finished)
    worst = max(abs(m - t) / t for m, t in zip(mine, truth, strict=True))
    reads = sum(s.reads for s in finished)
    return {
        "us_per_token": 1e6 * cpu / (streams * tokens),
        "shared": sum(s.shared_reads for s in finished) / reads,
        "worst_rate_error": worst,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="64,256")
    ap.add_argument("--rate", type=float, default=40.0, help="per-stream tok/s")
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--period-ms", type=float, default=2.0)
    args = ap.parse_args(argv)
    proc, url = start_synthetic(
        *f"--rate {args.rate:g} --falloff 0 --tokens-per-chunk 1 --ttft-s 0.03".split(),
        show_stderr=True,
    )
    print("load average {:.2f}, {:.2f}, {:.2f} before".format(*os.getloadavg()))
    try:
        for streams in (int(x) for x in args.streams.split(",")):
            r = run(url, streams, args.tokens, args.period_ms / 1000)
            print(
                f"{streams} streams x {args.rate:g} tok/s, poll every {args.period_ms:g} ms: "
                f"{r['us_per_token']:.1f} µs/token, {r['shared']:.2%} of reads held more than "
                f"one event, worst per-stream rate error {r['worst_rate_error']:.3%}",
                flush=True,
            )
    finally:
        proc.terminate()
        proc.wait(10)
    print("load average {:.2f}, {:.2f}, {:.2f} after".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
