"""Whether a TCP port can be listened on, tried the way servers bind it."""

from __future__ import annotations

import socket


def bind_error(host: str, port: int) -> OSError | None:
    """The error binding ``host:port`` gives now (None when it is free).

    Bound with SO_REUSEADDR, as uvicorn, llama-server and vLLM bind: connections left in
    TIME_WAIT by a server just stopped do not hold the port; a listener does. Raises
    ``socket.gaierror`` when ``host`` does not resolve.
    """
    for family, kind, proto, _name, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                                   flags=socket.AI_PASSIVE):
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                return exc
    return None
