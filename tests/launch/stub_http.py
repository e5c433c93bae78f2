"""A tiny real HTTP server on loopback for endpoint and download tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Handler = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]


def json_body(value) -> bytes:
    return json.dumps(value).encode()


@contextmanager
def serve(handle: Handler) -> Iterator[str]:
    """Serve ``handle(request) -> (status, headers, body)`` for GET, HEAD and POST; yields the base URL."""

    class _Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            status, headers, body = handle(self)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if (
                self.command != "HEAD"
            ):  # HEAD: the headers of the GET, Content-Length included, no body
                self.wfile.write(body)

        do_GET = do_POST = do_HEAD = _answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
