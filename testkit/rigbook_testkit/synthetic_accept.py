"""The synthetic server's accept loop: each request's arrival as the kernel stamped it.

The server's own stamp of a request comes when its event loop gets to reading it. A loop busy
with other connections (accepting and parsing a burst, rendering a reply shape for the first
time) reaches a request late, and a TTFT counted from its own stamp leaves that wait out, while a
client, which counts from its write, sees it. So every connection's first bytes are peeked
(``MSG_PEEK``: nothing is consumed) with ``SO_TIMESTAMPNS``, which gives the time the kernel
received them however late the loop reads, and only then handed to an ordinary stream pair.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Awaitable, Callable

# Linux's value; the socket module names it only on some builds.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_CMSG_SPACE = 64

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, float], Awaitable[None]]


def listener(host: str, port: int, reuse_port: bool) -> socket.socket:
    """A listening socket whose accepted connections inherit kernel receive timestamps."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind((host, port))
    sock.listen(4096)
    sock.setblocking(False)
    return sock


async def serve_stamped(sock: socket.socket, handle: Handler) -> None:
    """Accept connections on ``sock`` forever; each runs ``handle(reader, writer, received)``."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task] = set()
    while True:
        try:
            conns = [(await loop.sock_accept(sock))[0]]
            # the rest of a burst in this pass, not one connection per pass of the loop
            while True:
                try:
                    conns.append(sock.accept()[0])
                except OSError:  # none left (or none to spare: the outer accept says which)
                    break
        except OSError:  # out of file descriptors: as asyncio's own server does, wait and retry
            await asyncio.sleep(0.1)
            continue
        for conn in conns:
            task = loop.create_task(_connection(conn, handle))
            tasks.add(task)  # the loop keeps only weak references to its tasks
            task.add_done_callback(tasks.discard)


async def _connection(conn: socket.socket, handle: Handler) -> None:
    loop = asyncio.get_running_loop()
    conn.setblocking(False)
    try:
        received = await _first_bytes_received(conn)
        if received is None:  # closed before it sent a byte
            conn.close()
            return
        reader = asyncio.StreamReader(limit=2**16)
        protocol = asyncio.StreamReaderProtocol(reader)
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock=conn)
    except OSError:  # the peer reset the connection before it was handed over
        conn.close()
        return
    await handle(reader, asyncio.StreamWriter(transport, protocol, reader, loop), received)


def _set(future: asyncio.Future[None]) -> None:
    # the reader may fire again before the waiting task runs and removes it
    if not future.done():
        future.set_result(None)


async def _first_bytes_received(conn: socket.socket) -> float | None:
    """When the kernel received the connection's first bytes, on ``time.perf_counter``; None if
    the peer closed first. Without a kernel stamp (not Linux) it is the time they were seen."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            data, ancillary, _, _ = conn.recvmsg(1, _CMSG_SPACE, socket.MSG_PEEK)
            break
        except BlockingIOError:
            readable = loop.create_future()
            loop.add_reader(conn.fileno(), _set, readable)
            try:
                await readable
            finally:
                loop.remove_reader(conn.fileno())
    if not data:
        return None
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", value[:16])
            # The stamp is on the realtime clock: moved onto perf_counter by their offset now.
            offset = time.clock_gettime(time.CLOCK_REALTIME) - time.perf_counter()
            return sec + nsec / 1e9 - offset
    return time.perf_counter()
