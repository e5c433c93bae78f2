"""Whether a TCP port can be listened on, tried the way servers bind it."""

from __future__ import annotations

import socket

from rigbook.errors import InputError

MAX_PORT = 65535


def port_or_none(text: str | int | None) -> int | None:
    """A TCP port 1–65535 written in ASCII digits, else None (``"²"``, ``"0"`` and ``"99999"``
    are no port)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text if 1 <= text <= MAX_PORT else None
    if not isinstance(text, str) or not (text.isascii() and text.isdigit()) or len(text) > 5:
        return None
    port = int(text)
    return port if 1 <= port <= MAX_PORT else None


def parse_port(text: str | int | None, what: str = "--port") -> int | None:
    """The one port parser every command uses: None stays None, else 1–65535 or E_INPUT."""
    if text is None:
        return None
    port = port_or_none(text)
    if port is None:
        raise InputError(
            "E_INPUT",
            f"{what} {str(text)[:20]!r}: a port is a whole number from 1 to {MAX_PORT}",
            remedy="Give a port such as 8080.",
        )
    return port


def bind_error(host: str, port: int) -> OSError | None:
    """The error binding ``host:port`` gives now (None when it is free).

    Bound with SO_REUSEADDR, as uvicorn, llama-server and vLLM bind: connections left in
    TIME_WAIT by a server just stopped do not hold the port; a listener does. Raises
    ``socket.gaierror`` when ``host`` does not resolve.
    """
    for family, kind, proto, _name, address in socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    ):
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                return exc
    return None
