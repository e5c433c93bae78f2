"""A stub of the Hugging Face hub on loopback that serves one dataset file at one commit, the way
huggingface_hub downloads it (HEAD then GET of `/datasets/REPO/resolve/COMMIT/PATH`)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


@contextmanager
def serve_dataset_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: str, commit: str, path: str, data: bytes
) -> Iterator[dict]:
    """Yield ``{"seen": [(method, path), …], "sha": sha256 of data}`` while the stub answers, with
    huggingface_hub pointed at it and at a cache folder of this test's own."""
    sha = hashlib.sha256(data).hexdigest()
    seen: list[tuple[str, str]] = []

    class Hub(BaseHTTPRequestHandler):
        def _answer(self, with_body: bool) -> None:
            seen.append((self.command, self.path))
            if self.path.split("?")[0] != f"/datasets/{repo}/resolve/{commit}/{path}":
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Repo-Commit", commit)
            self.end_headers()
            if with_body:
                self.wfile.write(data)

        def do_HEAD(self):
            self._answer(False)

        def do_GET(self):
            self._answer(True)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    # huggingface_hub reads its cache folder once, at import: another test may have imported it,
    # and a file cached by an earlier run must not answer for the stub.
    import huggingface_hub.constants

    monkeypatch.setattr(
        huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub")
    )
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        yield {"seen": seen, "sha": sha}
    finally:
        server.shutdown()
