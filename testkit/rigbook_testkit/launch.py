"""The one way to start the synthetic server: the tests' helpers, ``selfbench`` and the benchmark
scripts all come here.

It runs as its own process (``python -m rigbook_testkit.synthetic_server``) so it never shares the
client's interpreter lock and the client's timestamps are its own; it is handed back once it
answers ``/v1/models``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from rigbook.openai.urls import models_url


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_synthetic(
    *options: str, port: int | None = None, show_stderr: bool = False, timeout_s: float = 30.0
) -> tuple[subprocess.Popen[bytes], str]:
    """The synthetic server with ``options`` (its command-line flags) on ``port`` (a free one if
    None); returns the process and its base URL. ``show_stderr`` leaves its stderr on this
    process's: a traceback there is how a request it could not serve shows."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigbook_testkit.synthetic_server", "--port", str(port), *options],
        stdout=subprocess.DEVNULL,
        stderr=None if show_stderr else subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            httpx.get(models_url(url), timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"the synthetic server did not start (options: {' '.join(options)})")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server :func:`start_synthetic` started, and wait for it."""
    proc.terminate()
    proc.wait(10)


@contextmanager
def serving(*options: str, port: int | None = None) -> Iterator[str]:
    """:func:`start_synthetic` for the length of a ``with`` block; yields the base URL."""
    proc, url = start_synthetic(*options, port=port)
    try:
        yield url
    finally:
        stop(proc)
