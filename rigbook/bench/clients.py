"""Which client streams a cell's requests, behind one small interface.

- ``compiled`` (:class:`~rigbook.bench.compiled.CompiledClient`): a reader thread in C, kernel
  receive stamps, no stall ticker. The default where it was built and the endpoint is plain HTTP.
- ``python`` (:class:`LoopClient`): the asyncio client of :mod:`rigbook.bench.client`, stamped at
  each read and watched by :class:`~rigbook.bench.scheduler.ClientMonitor`.

Both fill the same :class:`~rigbook.openai.stream.RawRequest` with the same parser, and the result's
``ClientLoad.timestamps`` says which one measured a cell (``kernel`` for the compiled one).
"""

from __future__ import annotations

from typing import Literal, Protocol

from rigbook.bench import compiled
from rigbook.bench.client import ReadWatch, Target, stream_chat
from rigbook.bench.result import ClientLoad
from rigbook.bench.scheduler import ClientMonitor
from rigbook.codes import Code
from rigbook.errors import InputError
from rigbook.openai.stream import RawRequest

ClientChoice = Literal["auto", "compiled", "python"]


class CellClient(Protocol):
    """Streams requests and watches itself for one cell."""

    kind: str

    async def send(self, body: bytes, raw: RawRequest) -> None: ...

    def start(self) -> None: ...

    async def stop(self) -> ClientLoad: ...

    def close(self) -> None: ...


class LoopClient:
    """The Python client: each stream a protocol on the event loop, a ticker watching the loop."""

    kind = "python"

    def __init__(self, target: Target, stall_s: float, connect_timeout_s: float = 10.0) -> None:
        self.target, self.stall_s, self.connect_timeout_s = target, stall_s, connect_timeout_s
        self.reads = ReadWatch()
        self.monitor = ClientMonitor(self.reads)

    async def send(self, body: bytes, raw: RawRequest) -> None:
        """Stream one request into ``raw`` (see :func:`~rigbook.bench.client.stream_chat`)."""
        await stream_chat(
            self.target, body, self.stall_s, raw, self.connect_timeout_s, reads=self.reads
        )

    def start(self) -> None:
        """Start the stall ticker."""
        self.monitor.start()

    async def stop(self) -> ClientLoad:
        """Stop the ticker and say what the client did."""
        return await self.monitor.stop()

    def close(self) -> None:
        """Nothing to release: each stream closes its own connection."""


def resolve(choice: ClientChoice, target: Target) -> Literal["compiled", "python"]:
    """The client a run uses: ``auto`` takes the compiled one where it can stream the target
    (plain HTTP, the extension built, a kernel that stamps what it receives); asking for
    ``compiled`` where it cannot is ``E_BENCH_CLIENT``."""
    if choice == "python":
        return "python"
    why = (
        "the endpoint is https"
        if target.tls
        else "it was not built into this install"
        if not compiled.available()
        else "this kernel gives no receive stamps (SO_TIMESTAMPNS), which are its timestamps"
        if not compiled.kernel_stamps()
        else None
    )
    if why is None:
        return "compiled"
    if choice == "auto":
        return "python"
    raise InputError(Code.E_BENCH_CLIENT, f"--client compiled: {why}")


def open_client(kind: Literal["compiled", "python"], target: Target, stall_s: float) -> CellClient:
    """A client for one cell (or a warmup), on the running event loop; ``close()`` it after."""
    if kind == "compiled":
        return compiled.CompiledClient(target, stall_s)
    return LoopClient(target, stall_s)
