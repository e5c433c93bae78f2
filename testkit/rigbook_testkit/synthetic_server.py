"""A synthetic OpenAI-compatible streaming server whose timing is known and recorded by itself.

Plain asyncio HTTP/1.1 on loopback (one response per connection, closed after
it), so the bench client is checked against real sockets. A chat request's content may be
a string or a list of parts, its length ``max_tokens`` or ``max_completion_tokens``; a
request it cannot read is answered 400. Each model id is a scenario:

- ``synthetic``: usage on every chunk (continuous), the first token alone (as an engine sends
  the one its prefill yields), then several tokens per chunk
- ``synthetic-final`` / ``synthetic-nousage``: usage only at the end / never
- ``synthetic-reasoning``: reasoning tokens (``reasoning_content``) before the content
- ``synthetic-early-eos``, ``synthetic-error``, ``synthetic-stall``, ``synthetic-drop``:
  every third request (server sequence 2, 5, 8 …; ``--fault-every``) stops early, sends an in-band
  error, goes silent for ``stall_s``, or drops the connection half-way.

The per-request rate falls as concurrency rises: ``rate / (1 + falloff·(active−1))``, or as
a known curve says (``--curve``, :mod:`rigbook_testkit.synthetic_curves`).
``POST /tokenize`` counts a prompt's words, its tokens. ``POST /_reset`` clears the record. ``GET /_record`` returns what the server did: for each request
when the kernel received it (:mod:`rigbook_testkit.synthetic_accept`) and when the server read it, the
send time of every chunk and the tokens each carried, computed into the same
metrics the client reports. ``GET /_sent`` gives the tokens sent and the stream writes that
carried them, summed over all processes (``benchmarks/scripts/client/server_ceiling.py`` reads it). ``GET /metrics`` gives Prometheus counters named as vLLM names
them (``vllm:generation_tokens_total``, ``vllm:prompt_tokens_total`` and the
``vllm:time_to_first_token_seconds`` histogram, and the ``vllm:num_requests_running`` gauge of
requests in flight), or as llama-server or SGLang do
(``--metrics-flavor``), so the bench's server-side cross-check is tested here.
``--prefix-cache`` models a prefix cache exactly (:mod:`rigbook_testkit.synthetic_prefix`): each
response says its cached prompt tokens, ``/metrics`` counts vLLM's prefix-cache queries and hits, and
``--prefill-ms-per-token`` makes every uncached prompt token cost TTFT.

Built to outrun the client it checks (at least 50,000 tok/s on two cores): every
event of a reply is rendered once and cached as bytes, one timer per process sends the
events that fall due on all streams (:mod:`rigbook_testkit.synthetic_pacer`), events of one
stream that fall due together go out in one write, and ``--processes N`` serves one port
from N processes (SO_REUSEPORT) whose counters are summed in shared memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from rigbook_testkit.synthetic_accept import listener, serve_stamped
from rigbook_testkit.synthetic_curves import Curve
from rigbook_testkit.synthetic_pacer import Pacer, Stream
from rigbook_testkit.synthetic_prefix import PrefixCache
from rigbook_testkit.synthetic_record import FLAVORS, Counters, Served

SCENARIOS = (
    "synthetic",
    "synthetic-final",
    "synthetic-nousage",
    "synthetic-reasoning",
    "synthetic-early-eos",
    "synthetic-error",
    "synthetic-stall",
    "synthetic-drop",
)


# Each flavor's gauge of requests in flight, named as its engine names it.
IN_FLIGHT = {
    "vllm": "vllm:num_requests_running",
    "sglang": "sglang:num_running_reqs",
    "llamacpp": "llamacpp:requests_processing",
}


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
    curve: Curve | None = None  # a known load curve (synthetic_curves) in place of rate and falloff
    metrics_flavor: str = "vllm"
    # A prefix cache (synthetic_prefix): responses say their cached prompt tokens, and each
    # uncached prompt token adds this much to the TTFT.
    prefix_cache: bool = False
    prefill_s_per_token: float = 0.0


class ChatRequest(NamedTuple):
    """What the server reads from a chat completion request."""

    model: str
    stream: bool
    max_tokens: int
    prompt_tokens: int  # words of the prompt
    words: tuple[str, ...] = ()  # the prompt's words in order: its tokens, for the prefix cache

    @classmethod
    def parse(cls, body: bytes) -> ChatRequest:
        """Read a request body; raises ValueError, TypeError or AttributeError on one it cannot read.

        A message's content is a string or a list of parts (``[{"type": "text", "text": …}]``), and
        the length is ``max_tokens`` or its newer name ``max_completion_tokens``: GuideLLM sends
        the second form of both.
        """
        req = json.loads(body or b"{}")
        words: list[str] = []
        for message in req.get("messages", []):
            content = message.get("content") or ""
            texts = [content] if isinstance(content, str) else [p.get("text", "") for p in content]
            for t in texts:
                words += t.split()
        return cls(
            model=req.get("model", "synthetic"),
            stream=bool(req.get("stream")),
            max_tokens=int(req.get("max_tokens") or req.get("max_completion_tokens") or 16),
            prompt_tokens=len(words),
            words=tuple(words),
        )


class SyntheticServer:
    """The server. Tests and selfbench run it as its own process (``python -m``) so it never shares
    the client's interpreter lock and the client's timestamps are its own."""

    def __init__(
        self,
        config: Config | None = None,
        counters: Counters | None = None,
        keep_record: bool = True,
    ) -> None:
        self.config = config or Config()
        self.counters = counters or Counters()
        self.keep_record = keep_record
        self.record: list[Served] = []
        self.active = 0
        self._seq: dict[str, int] = {}
        self.port: int | None = None
        self._factors = self.config.curve.factors() if self.config.curve else None
        self._pacer = Pacer(self._rate, self.counters)
        self._accepting: asyncio.Task | None = None
        self.prefix = PrefixCache() if self.config.prefix_cache else None

    async def serve(self, host: str = "127.0.0.1", port: int = 0, reuse_port: bool = False) -> None:
        """Listen on ``host:port`` (0: a free port, then ``self.port`` says which) and return; the
        connections are served in the background."""
        sock = listener(host, port, reuse_port)
        self.port = sock.getsockname()[1]
        self._accepting = asyncio.get_running_loop().create_task(serve_stamped(sock, self._handle))

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: float
    ) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip()
                for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            arrival = time.perf_counter()
            if method == "GET" and path == "/v1/models":
                await self._json(
                    writer,
                    {
                        "object": "list",
                        "data": [
                            {"id": m, "object": "model", "owned_by": "synthetic"} for m in SCENARIOS
                        ],
                    },
                )
            elif method == "GET" and path == "/_record":
                await self._json(
                    writer,
                    {
                        "config": self._config_json(),
                        "active": self.active,
                        "requests": [s.to_dict() for s in self.record],
                    },
                )
            elif method == "GET" and path == "/_sent":
                await self._json(writer, self.counters.sent())
            elif method == "GET" and path == "/health":
                await self._json(writer, {"status": "ok"})
            elif method == "POST" and path == "/tokenize":
                # Its tokens are a prompt's words, as it counts them in usage (vLLM's answer form).
                req = json.loads(body or b"{}")
                words = str(req.get("prompt", req.get("content", ""))).split()
                await self._json(writer, {"count": len(words), "tokens": list(range(len(words)))})
            elif method == "GET" and path == "/metrics":
                data = self.counters.render(self.config.metrics_flavor) + self._in_flight()
                if self.prefix is not None and self.config.metrics_flavor == "vllm":
                    data += self.prefix.render()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                    b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(data) + data
                )
                await writer.drain()
            elif method == "POST" and path == "/_reset":
                self.record.clear()
                self._seq.clear()
                await self._json(writer, {"reset": True})
            elif method == "POST" and path == "/v1/chat/completions":
                try:
                    chat = ChatRequest.parse(body)
                except (ValueError, TypeError, AttributeError) as exc:
                    # Answered, not dropped: a closed connection tells the client nothing.
                    await self._json(
                        writer, {"error": {"message": f"bad request: {exc}"}}, status=400
                    )
                else:
                    await self._chat(reader, writer, chat, received, arrival)
            else:
                await self._json(
                    writer,
                    {"error": {"message": f"no route {method} {path}"}},
                    status=404,
                )
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _json(self, writer: asyncio.StreamWriter, value: dict, status: int = 200) -> None:
        data = json.dumps(value).encode()
        writer.write(
            f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            f"Connection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    def _in_flight(self) -> bytes:
        """The gauge of requests in flight, as the flavor's engine names it (this process's)."""
        name = IN_FLIGHT[self.config.metrics_flavor]
        label = '{model_name="synthetic"}' if self.config.metrics_flavor != "llamacpp" else ""
        return f"# TYPE {name} gauge\n{name}{label} {self.active}\n".encode()

    def _config_json(self) -> dict:
        curve = self.config.curve
        return {**self.config.__dict__, "curve": curve.model_dump() if curve else None}

    def _rate(self) -> float:
        if self.config.curve:
            return self.config.curve.rate(self.active)
        return self.config.rate_tok_s / (1.0 + self.config.falloff * max(self.active - 1, 0))

    def _release(self) -> None:
        self.active -= 1

    async def _chat(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        chat: ChatRequest,
        received: float,
        arrival: float,
    ) -> None:
        cfg = self.config
        model = chat.model
        if model not in SCENARIOS:
            await self._json(
                writer, {"error": {"message": f"model {model!r} not found"}}, status=404
            )
            return
        seq = self._seq.get(model, 0)
        self._seq[model] = seq + 1
        fault = (
            model.removeprefix("synthetic-")
            if model in SCENARIOS[4:] and seq % cfg.fault_every == cfg.fault_every - 1
            else None
        )
        served = Served(
            seq=seq,
            model=model,
            received=received,
            arrival=arrival,
            prompt_tokens=chat.prompt_tokens,
            fault=fault,
        )
        curve = cfg.curve
        if curve and curve.refuses(self.active + 1):
            await self._json(writer, {"error": {"message": "synthetic: over capacity"}}, status=503)
            return
        factor = curve.factor(self._factors) if curve and self._factors is not None else 1.0
        spike = curve.spike(self._factors) if curve and self._factors is not None else 0.0
        if self.keep_record:
            self.record.append(served)
        total = chat.max_tokens // 2 if fault == "early-eos" else chat.max_tokens
        prefill = 0.0
        if self.prefix is not None:
            served.cached_tokens = self.prefix.take(chat.words)
            prefill = cfg.prefill_s_per_token * (chat.prompt_tokens - served.cached_tokens)
        if not chat.stream:
            # A plain (non-streamed) completion, as some clients send to warm up: the same timing,
            # one JSON answer at the end.
            await asyncio.sleep(cfg.ttft_s + total / self._rate())
            self.counters.add_tokens(total)
            self.counters.add_request(served.prompt_tokens, cfg.ttft_s)
            served.completed = True
            usage = {
                "prompt_tokens": served.prompt_tokens,
                "completion_tokens": total,
                "total_tokens": served.prompt_tokens + total,
            }
            await self._json(
                writer,
                {
                    "id": "synthetic",
                    "object": "chat.completion",
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "length",
                            "message": {"role": "assistant", "content": "tok " * total},
                        }
                    ],
                    "usage": usage,
                },
            )
            return
        # early-eos just ends short (total halved); the others break the stream half-way
        midway = fault in ("error", "stall", "drop")
        events = _events(
            model,
            cfg.tokens_per_chunk,
            total,
            served.prompt_tokens,
            cfg.reasoning_tokens if model == "synthetic-reasoning" else 0,
            fault == "early-eos",
            served.cached_tokens,
        )
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Connection: close\r\n\r\n"
        )
        self.active += 1
        counted = True

        def hung_up(eof: asyncio.Future) -> None:
            # A client that closes frees its slot at once, as an engine aborts the request: the
            # next cell's streams must not find it still taken (and be refused) for a token gap.
            nonlocal counted
            if counted and not eof.cancelled() and (eof.exception() or eof.result() == b""):
                counted = False
                if curve and curve.linger_s:
                    asyncio.get_running_loop().call_later(curve.linger_s, self._release)
                else:
                    self.active -= 1
                writer.transport.close()

        eof = asyncio.ensure_future(reader.read(1))
        eof.add_done_callback(hung_up)
        try:
            await asyncio.sleep(
                (curve.ttft(self.active) + spike if curve else cfg.ttft_s) + prefill
            )
            stream = Stream(
                writer.transport,
                events.chunks,
                events.counts,
                served,
                factor,
                total // 2 if midway else total,
            )
            await self._pacer.run(stream, writer)
            if stream.gone or writer.transport.is_closing():  # the client hung up
                return
            if midway:
                await self._fault(writer, fault)
                return
            writer.write(events.tail)
            await writer.drain()
            served.completed = True
            if self.prefix is not None:
                self.prefix.keep(chat.words + ("tok",) * stream.sent)
        except ConnectionError:
            pass
        finally:
            eof.cancel()  # its callback may be queued already: `counted` stops a second count
            if counted:
                counted = False
                self.active -= 1

    async def _fault(self, writer: asyncio.StreamWriter, fault: str | None) -> None:
        if fault == "error":
            writer.write(_event({"error": {"message": "synthetic in-band error", "code": 500}}))
            await writer.drain()
        elif fault == "stall":
            await asyncio.sleep(self.config.stall_s)
        elif fault == "drop":
            writer.transport.abort()


class _Rendered:
    """A reply's events as bytes: one per chunk, and the tail (finish, usage, [DONE])."""

    def __init__(self, chunks: list[bytes], counts: list[int], tail: bytes) -> None:
        self.chunks, self.counts, self.tail = chunks, counts, tail


def _event(data: dict) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


# Numbers no reply holds, rendered where a chunk's running counts go (see _chunk_format).
_DONE_MARK, _TOTAL_MARK = -987654321, -987654322


def _chunk_data(model: str, kind: str, n: int) -> dict:
    """A chunk of ``n`` tokens of ``kind`` (content or reasoning), without usage."""
    return {
        "id": "synthetic",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{"index": 0, "delta": {kind: "tok " * n}, "finish_reason": None}],
    }


@lru_cache(maxsize=64)
def _chunk_format(model: str, kind: str, n: int, prompt_tokens: int) -> bytes:
    """A chunk of ``n`` tokens with continuous usage, rendered once as a ``%``-format whose two
    ``%d`` are its completion and total tokens: a 1,000-event reply is then formatted, not
    JSON-encoded event by event, so a burst of new reply shapes does not hold the server's loop
    (formatting costs a fraction of encoding)."""
    data = _chunk_data(model, kind, n)
    data["usage"] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": _DONE_MARK,
        "total_tokens": _TOTAL_MARK,
    }
    event = _event(data).replace(b"%", b"%%")
    return event.replace(b"%d" % _DONE_MARK, b"%d").replace(b"%d" % _TOTAL_MARK, b"%d")


@lru_cache(maxsize=64)
def _chunk(model: str, kind: str, n: int) -> bytes:
    """A chunk of ``n`` tokens without usage: every such chunk of a reply is the same bytes."""
    return _event(_chunk_data(model, kind, n))


@lru_cache(maxsize=256)
def _events(
    model: str,
    per_chunk: int,
    total: int,
    prompt_tokens: int,
    reasoning: int,
    early_eos: bool,
    cached_tokens: int | None = None,
) -> _Rendered:
    """Render a reply once; replies of the same shape share it."""
    usage_mode = {"synthetic-final": "final", "synthetic-nousage": "none"}.get(model, "continuous")
    chunks, counts, sent = [], [], 0
    while sent < total:
        # The first token goes alone, as an engine's does (the prefill yields one token).
        n = 1 if sent == 0 else min(per_chunk, total - sent)
        kind = "reasoning_content" if sent < reasoning else "content"
        if usage_mode == "continuous":
            chunk = _chunk_format(model, kind, n, prompt_tokens) % (
                sent + n,
                prompt_tokens + sent + n,
            )
        else:
            chunk = _chunk(model, kind, n)
        chunks.append(chunk)
        counts.append(n)
        sent += n
    tail = _event(
        {
            "id": "synthetic",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "delta": {},
                    "finish_reason": "stop" if early_eos else "length",
                }
            ],
        }
    )
    if usage_mode != "none":
        tail += _event(
            {
                "id": "synthetic",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": sent,
                    "total_tokens": prompt_tokens + sent,
                    "completion_tokens_details": {"reasoning_tokens": min(reasoning, sent)},
                }
                # As llama-server and vLLM (--enable-prompt-tokens-details) say it.
                | (
                    {"prompt_tokens_details": {"cached_tokens": cached_tokens}}
                    if cached_tokens is not None
                    else {}
                ),
            }
        )
    return _Rendered(chunks, counts, tail + b"data: [DONE]\n\n")


def _serve_forever(
    config: Config, port: int, counters: Counters, keep_record: bool, reuse: bool
) -> None:
    # A worker of --processes N inherits the parent's SIGTERM handler, whose SystemExit, raised
    # anywhere in the event loop, could leave the worker hung; terminate() is to end it at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    server = SyntheticServer(config, counters, keep_record=keep_record)

    async def run() -> None:
        await server.serve(port=port, reuse_port=reuse)
        print(
            f"synthetic server on http://127.0.0.1:{server.port} (pid {os.getpid()})",
            flush=True,
        )
        await asyncio.Event().wait()

    try:
        try:
            import uvloop

            uvloop.run(run())
        except ImportError:
            asyncio.run(run())
    except KeyboardInterrupt:
        pass


def main() -> None:
    """``python -m rigbook_testkit.synthetic_server --port 8123``"""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument(
        "--rate",
        type=float,
        default=Config.rate_tok_s,
        help="per-request tok/s at concurrency 1",
    )
    ap.add_argument("--falloff", type=float, default=Config.falloff)
    ap.add_argument("--tokens-per-chunk", type=int, default=Config.tokens_per_chunk)
    ap.add_argument("--ttft-s", type=float, default=Config.ttft_s)
    ap.add_argument("--stall-s", type=float, default=Config.stall_s)
    ap.add_argument(
        "--fault-every",
        type=int,
        default=Config.fault_every,
        help="the fault scenarios fail every Nth request (1: every one)",
    )
    ap.add_argument(
        "--metrics-flavor",
        choices=sorted(FLAVORS),
        default=Config.metrics_flavor,
        help="whose counter names /metrics uses",
    )
    ap.add_argument(
        "--processes",
        type=int,
        default=1,
        help="serve the port from this many processes (/_record then covers one of them only)",
    )
    ap.add_argument(
        "--curve",
        type=Curve.model_validate_json,
        default=None,
        help='a known load curve as JSON, e.g. \'{"shape": "cliff", "knee": 12}\'',
    )
    ap.add_argument(
        "--prefix-cache",
        action="store_true",
        help="model a prefix cache: responses say their cached prompt tokens, /metrics (vllm "
        "flavor) counts vllm:prefix_cache_queries and _hits",
    )
    ap.add_argument(
        "--prefill-ms-per-token",
        type=float,
        default=0.0,
        help="with --prefix-cache: each uncached prompt token adds this to the TTFT",
    )
    args = ap.parse_args()
    config = Config(
        rate_tok_s=args.rate,
        falloff=args.falloff,
        tokens_per_chunk=args.tokens_per_chunk,
        ttft_s=args.ttft_s,
        stall_s=args.stall_s,
        metrics_flavor=args.metrics_flavor,
        fault_every=args.fault_every,
        curve=args.curve,
        prefix_cache=args.prefix_cache,
        prefill_s_per_token=args.prefill_ms_per_token / 1000.0,
    )
    counters = Counters()
    if args.processes <= 1:
        _serve_forever(config, args.port, counters, True, False)
        return
    # The falloff is per process here: each sees only its own active streams.
    procs = [
        multiprocessing.Process(
            target=_serve_forever,
            args=(config, args.port, counters, False, True),
            daemon=True,
        )
        for _ in range(args.processes)
    ]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # so `finally` stops the children
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join()
    except KeyboardInterrupt:
        pass
    finally:
        for p in procs:
            p.terminate()


if __name__ == "__main__":
    main()
