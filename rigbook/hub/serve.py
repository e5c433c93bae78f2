"""`rigbook hub serve`: check the port, migrate once, then run N uvicorn workers on uvloop and httptools.

uvicorn finds a taken port only after the database is migrated and the banner
printed, and then logs an ERROR and exits 3; checking first fails at once with
E_PORT (exit 2). Another process can still take the port between the check and
uvicorn's bind; the check is for the common case of a hub already running.

Each worker asks the kernel for SIGTERM when the process that started it dies
(Linux ``PR_SET_PDEATHSIG``), and exits at once if that process is already
gone: killing only the parent (kill -9 included) leaves no orphan serving on
the port.

Workers share nothing but the database: rate limits, token revocation and the
board's version (which keys each worker's answer cache) live there, so N
workers, or N instances on one PostgreSQL, behave as one hub.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import sys
from collections.abc import Callable

from fastapi import FastAPI
from pydantic import BaseModel

from rigbook.errors import EnvironmentProblem, InputError
from rigbook.hub.app import create_app
from rigbook.hub.limits import DEFAULT_MAX_BODY
from rigbook.hub.rates import Limits
from rigbook.ports import bind_error

SETTINGS_ENV = "RIGBOOK_HUB_SETTINGS"
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def check_port(host: str, port: int) -> None:
    """Raise E_PORT when something holds ``host:port``; E_INPUT when this machine cannot listen there at all."""
    try:
        exc = bind_error(host, port)
    except socket.gaierror as bad:
        raise InputError(
            "E_INPUT", f"--host {host!r} is not an address of this machine: {bad.strerror}"
        ) from None
    if exc is None:
        return
    if exc.errno == errno.EADDRINUSE:
        raise EnvironmentProblem(
            "E_PORT",
            f"port {port} on {host} is already in use",
            "Stop what listens there (another `rigbook hub serve`?) or pick "
            "another port with `--port`.",
        )
    raise InputError("E_INPUT", f"cannot listen on {host}:{port}: {exc.strerror}")


class ServeSettings(BaseModel):
    """What every worker of `rigbook hub serve` needs to build the same app (passed through the environment)."""

    db: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    limits: Limits = Limits()
    parent_pid: int | None = None


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel send this process SIGTERM when its parent dies; exit now if ``parent_pid`` is
    no longer the parent (it died before the request was made)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGTERM)


def worker_app() -> FastAPI:
    """The app of one worker process: settings from RIGBOOK_HUB_SETTINGS; migration and catalog already done.
    The worker dies with the `hub serve` process that started it."""
    settings = ServeSettings.model_validate_json(os.environ.get(SETTINGS_ENV, "{}"))
    parent = settings.parent_pid
    if parent is not None and parent != os.getpid():  # one worker runs in `hub serve` itself
        die_with_parent(parent)
    return create_app(
        settings.db, migrate=False, max_body=settings.max_body, limits=settings.limits
    )


def serve(
    settings: ServeSettings,
    *,
    host: str,
    port: int,
    workers: int,
    forwarded_allow_ips: str | None,
    announce: Callable[[], None],
) -> None:
    """Migrate and load the catalog once, ``announce``, then run ``workers`` uvicorn worker processes
    (uvloop, httptools)."""
    import uvicorn

    check_port(host, port)
    create_app(
        settings.db, max_body=settings.max_body, limits=settings.limits
    ).state.engine.dispose()
    announce()
    os.environ[SETTINGS_ENV] = settings.model_copy(
        update={"parent_pid": os.getpid()}
    ).model_dump_json()
    uvicorn.run(
        "rigbook.hub.serve:worker_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        forwarded_allow_ips=forwarded_allow_ips,
        proxy_headers=forwarded_allow_ips is not None,
    )
