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
from rigbook.ports import bind_error


def check_port(host: str, port: int) -> None:
    """Raise E_PORT when something holds ``host:port``; E_INPUT when this machine cannot listen there at all."""
    try:
        exc = bind_error(host, port)
    except socket.gaierror as bad:
        raise InputError("E_INPUT", f"--host {host!r} is not an address of this machine: {bad.strerror}") from None
    if exc is None:
        return
    if exc.errno == errno.EADDRINUSE:
        raise EnvironmentProblem("E_PORT", f"port {port} on {host} is already in use",
                                 "Stop what listens there (another `rigbook hub serve`?) or pick "
                                 "another port with `--port`.")
    raise InputError("E_INPUT", f"cannot listen on {host}:{port}: {exc.strerror}")
