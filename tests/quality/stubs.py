"""Small OpenAI-compatible servers on loopback whose answers are known: an honest needle reader
and servers written to cheat it (echo, list every code, swap codes between vaults, copy the
first or last code seen) or to cut the prompt at a context, as Ollama does.

Each counts tokens the same simple way (a word or a punctuation mark is a token), offers that
count at ``/tokenize`` when asked to, and reports ``usage.prompt_tokens`` as what it kept.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_TOKEN = re.compile(r"\w+|[^\w\s]")
_FACT = re.compile(r"vault ([A-Z]{4}-\d{4}) is (\d{7})")
_CODE = re.compile(r"(?<!\d)\d{7}(?!\d)")
TEMPLATE_TOKENS = 10  # what the stub's "chat template" adds to a message


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _asked(message: str) -> list[str]:
    question = message.rsplit("Question:", 1)[-1]
    return re.findall(r"vault ([A-Z]{4}-\d{4})", question)


def honest(message: str) -> str:
    """Reads the prompt: each asked vault with its code, in the asked form."""
    codes = dict(_FACT.findall(message))
    return "\n".join(f"{k}: {codes.get(k, 'unknown')}" for k in _asked(message))


def echo(message: str) -> str:
    return message


def list_codes(message: str) -> str:
    return "\n".join(_CODE.findall(message))


def swap(message: str) -> str:
    """The right codes, each under the next asked vault."""
    codes = dict(_FACT.findall(message))
    keys = _asked(message)
    values = [codes[k] for k in keys]
    return "\n".join(f"{k}: {v}" for k, v in zip(keys, values[1:] + values[:1], strict=True))


def copy_first(message: str) -> str:
    """The first asked vault with the first code in the prompt."""
    return f"{_asked(message)[0]}: {_CODE.findall(message)[0]}"


def copy_last(message: str) -> str:
    """The first asked vault with the last code in the prompt."""
    return f"{_asked(message)[0]}: {_CODE.findall(message)[-1]}"


def knows_nothing(message: str) -> str:
    return "I could not find it."


@dataclass
class Stub:
    reply: Callable[[str], str]
    tokenizer: bool = True
    context: int | None = None  # keep at most this many prompt tokens (the rest is cut)
    requests: int = 0

    def prompt_tokens(self, message: str) -> int:
        count = len(tokens(message)) + TEMPLATE_TOKENS
        return count if self.context is None else min(count, self.context)


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                models = {"data": [{"id": "stub", "object": "model", "owned_by": "stub"}]}
                self._send(200, json.dumps(models).encode())
            else:
                self._send(404, b"{}")

        def do_POST(self) -> None:
            data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/tokenize" and stub.tokenizer:
                text = data.get("prompt") or data.get("content") or ""
                self._send(200, json.dumps({"count": len(tokens(text))}).encode())
                return
            if self.path != "/v1/chat/completions":
                self._send(404, b"{}")
                return
            stub.requests += 1
            message = data["messages"][0]["content"]
            usage = {"prompt_tokens": stub.prompt_tokens(message), "completion_tokens": 1}
            text = stub.reply(message) if data.get("max_tokens", 2) > 1 else "x"
            if not data.get("stream"):
                answer = {
                    "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                    "usage": usage,
                }
                self._send(200, json.dumps(answer).encode())
                return
            events = [{"choices": [{"delta": {"content": text}, "finish_reason": None}]}]
            events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
            if (data.get("stream_options") or {}).get("include_usage"):
                events.append({"choices": [], "usage": usage})
            body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            self._send(200, body.encode(), "text/event-stream")

    return Handler


@contextmanager
def serve(stub: Stub) -> Iterator[str]:
    """Run ``stub`` on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
