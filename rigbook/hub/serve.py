"""Before `rigbook hub serve` listens: is its address free?

uvicorn finds a taken port only after the database is migrated and the banner
printed, and then logs an ERROR and exits 3; checking first fails at once with
E_PORT (exit 2). Another process can still take the port between the check and
uvicorn's bind; the check is for the common case of a hub already running.
"""

from __future__ import annotations

import errno
import socket

from rigbook.errors import EnvironmentProblem, InputError


def check_port(host: str, port: int) -> None:
    """Raise E_PORT when something holds ``host:port``; E_INPUT when this machine cannot listen there at all."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError("E_INPUT", f"--host {host!r} is not an address of this machine: {exc.strerror}") from None
    for family, kind, proto, _name, address in addresses:
        with socket.socket(family, kind, proto) as sock:
            # As uvicorn binds: a port left in TIME_WAIT by a stopped hub is free to listen on again.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise EnvironmentProblem("E_PORT", f"port {port} on {host} is already in use",
                                             "Stop what listens there (another `rigbook hub serve`?) or pick "
                                             "another port with `--port`.") from None
                raise InputError("E_INPUT", f"cannot listen on {host}:{port}: {exc.strerror}") from None
