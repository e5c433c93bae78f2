"""A synthetic OpenAI-compatible streaming server whose timing is known and recorded by itself.

Plain asyncio HTTP/1.1 on loopback (one response per connection, closed after
it), so the bench client is checked against real sockets. Each model id is a
scenario:

- ``synthetic``: usage on every chunk (continuous), several tokens per chunk
- ``synthetic-final`` / ``synthetic-nousage``: usage only at the end / never
- ``synthetic-reasoning``: reasoning tokens (``reasoning_content``) before the content
- ``synthetic-early-eos``, ``synthetic-error``, ``synthetic-stall``, ``synthetic-drop``:
  every third request (server sequence 2, 5, 8 …) stops early, sends an in-band
  error, goes silent for ``stall_s``, or drops the connection half-way.

The per-request rate falls as concurrency rises: ``rate / (1 + falloff·(active−1))``.
``POST /_reset`` clears the record. ``GET /_record`` returns what the server did: for each request its arrival, the
send time of every chunk and the tokens each carried, computed into the same
metrics the client reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass, field

SCENARIOS = ("synthetic", "synthetic-final", "synthetic-nousage", "synthetic-reasoning",
             "synthetic-early-eos", "synthetic-error", "synthetic-stall", "synthetic-drop")


@dataclass
class Config:
    """The server's known timing."""

    rate_tok_s: float = 200.0
    falloff: float = 0.25
    tokens_per_chunk: int = 3
    ttft_s: float = 0.03
    reasoning_tokens: int = 24
    stall_s: float = 3.0
    fault_every: int = 3


@dataclass
class Served:
    """One request as the server handled it; times on ``time.perf_counter``."""

    seq: int
    model: str
    arrival: float
    prompt_tokens: int
    sends: list[tuple[float, int]] = field(default_factory=list)  # (time, tokens in that chunk)
    fault: str | None = None
    completed: bool = False

    def to_dict(self) -> dict:
        tokens = sum(n for _, n in self.sends)
        first, last = (self.sends[0][0], self.sends[-1][0]) if self.sends else (None, None)
        after = tokens - (self.sends[0][1] if self.sends else 0)
        decode = after / (last - first) if self.sends and last > first else None
        return {"seq": self.seq, "model": self.model, "arrival": self.arrival, "first_send": first, "last_send": last,
                "tokens": tokens, "chunks": len(self.sends), "ttft_s": (first - self.arrival) if first else None,
                "decode_tok_s": decode, "fault": self.fault, "completed": self.completed,
                "prompt_tokens": self.prompt_tokens}


class SyntheticServer:
    """The server. Tests and selfbench run it as its own process (``python -m``) so it never shares
    the client's interpreter lock and the client's timestamps are its own."""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config or Config()
        self.record: list[Served] = []
        self.active = 0
        self._seq: dict[str, int] = {}
        self.port: int | None = None

    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> None:
        server = await asyncio.start_server(self._handle, host, port, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            arrival = time.perf_counter()
            if method == "GET" and path == "/v1/models":
                await self._json(writer, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "synthetic"}
                                                                     for m in SCENARIOS]})
            elif method == "GET" and path == "/_record":
                await self._json(writer, {"config": self.config.__dict__, "active": self.active, "requests": [s.to_dict() for s in self.record]})
            elif method == "POST" and path == "/_reset":
                self.record.clear()
                self._seq.clear()
                await self._json(writer, {"reset": True})
            elif method == "POST" and path == "/v1/chat/completions":
                await self._chat(writer, json.loads(body or b"{}"), arrival)
            else:
                await self._json(writer, {"error": {"message": f"no route {method} {path}"}}, status=404)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _json(self, writer: asyncio.StreamWriter, value: dict, status: int = 200) -> None:
        data = json.dumps(value).encode()
        writer.write(f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + data)
        await writer.drain()

    def _rate(self) -> float:
        return self.config.rate_tok_s / (1.0 + self.config.falloff * max(self.active - 1, 0))

    async def _chat(self, writer: asyncio.StreamWriter, req: dict, arrival: float) -> None:
        cfg = self.config
        model = req.get("model", "synthetic")
        if model not in SCENARIOS:
            await self._json(writer, {"error": {"message": f"model {model!r} not found"}}, status=404)
            return
        seq = self._seq.get(model, 0)
        self._seq[model] = seq + 1
        fault = model.removeprefix("synthetic-") if model in SCENARIOS[4:] and seq % cfg.fault_every == 2 else None
        prompt = " ".join(m.get("content", "") for m in req.get("messages", []))
        served = Served(seq=seq, model=model, arrival=arrival, prompt_tokens=len(prompt.split()), fault=fault)
        self.record.append(served)
        max_tokens = int(req.get("max_tokens") or 16)
        usage_mode = {"synthetic-final": "final", "synthetic-nousage": "none"}.get(model, "continuous")
        reasoning = cfg.reasoning_tokens if model == "synthetic-reasoning" else 0
        total = max_tokens // 2 if fault == "early-eos" else max_tokens
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     b"Connection: close\r\n\r\n")
        self.active += 1
        try:
            await asyncio.sleep(cfg.ttft_s)
            sent, due = 0, time.perf_counter()
            while sent < total:
                n = min(cfg.tokens_per_chunk, total - sent)
                if fault and sent >= total // 2:
                    if fault == "error":
                        await self._event(writer, {"error": {"message": "synthetic in-band error", "code": 500}})
                        return
                    if fault == "stall":
                        await asyncio.sleep(cfg.stall_s)
                        return
                    if fault == "drop":
                        writer.transport.abort()
                        return
                kind = "reasoning_content" if sent < reasoning else "content"
                chunk = {"id": f"s{seq}", "object": "chat.completion.chunk", "model": model,
                         "choices": [{"index": 0, "delta": {kind: "tok " * n}, "finish_reason": None}]}
                if usage_mode == "continuous":
                    chunk["usage"] = {"prompt_tokens": served.prompt_tokens, "completion_tokens": sent + n,
                                      "total_tokens": served.prompt_tokens + sent + n}
                await self._event(writer, chunk)
                served.sends.append((time.perf_counter(), n))
                sent += n
                due += n / self._rate()
                await asyncio.sleep(max(due - time.perf_counter(), 0))
            finish = {"id": f"s{seq}", "object": "chat.completion.chunk", "model": model,
                      "choices": [{"index": 0, "delta": {}, "finish_reason": "stop" if fault == "early-eos" else "length"}]}
            await self._event(writer, finish)
            if usage_mode != "none":
                await self._event(writer, {"id": f"s{seq}", "object": "chat.completion.chunk", "choices": [],
                                           "usage": {"prompt_tokens": served.prompt_tokens, "completion_tokens": sent,
                                                     "total_tokens": served.prompt_tokens + sent,
                                                     "completion_tokens_details": {"reasoning_tokens": min(reasoning, sent)}}})
            writer.write(b"data: [DONE]\n\n")
            await writer.drain()
            served.completed = True
        except ConnectionError:
            pass
        finally:
            self.active -= 1

    async def _event(self, writer: asyncio.StreamWriter, data: dict) -> None:
        writer.write(b"data: " + json.dumps(data).encode() + b"\n\n")
        await writer.drain()


def main() -> None:
    """``python -m rigbook.bench.synthetic_server --port 8123``"""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument("--rate", type=float, default=Config.rate_tok_s, help="per-request tok/s at concurrency 1")
    ap.add_argument("--falloff", type=float, default=Config.falloff)
    ap.add_argument("--tokens-per-chunk", type=int, default=Config.tokens_per_chunk)
    ap.add_argument("--stall-s", type=float, default=Config.stall_s)
    args = ap.parse_args()
    server = SyntheticServer(Config(rate_tok_s=args.rate, falloff=args.falloff,
                                    tokens_per_chunk=args.tokens_per_chunk, stall_s=args.stall_s))

    async def run() -> None:
        await server.serve(port=args.port)
        print(f"synthetic server on http://127.0.0.1:{server.port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
