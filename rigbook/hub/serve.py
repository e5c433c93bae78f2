"""`rigbook hub serve`: check the port, migrate once, then run N uvicorn workers on uvloop and httptools.

uvicorn finds a taken port only after the database is migrated and the banner
printed, and then logs an ERROR and exits 3; checking first fails at once with
E_PORT (exit 2). Another process can still take the port between the check and
uvicorn's bind; the check is for the common case of a hub already running.

Workers share nothing but the database: rate limits, token revocation and the
board's version (which keys each worker's answer cache) live there, so N
workers, or N instances on one PostgreSQL, behave as one hub.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable

from fastapi import FastAPI
from pydantic import BaseModel

from rigbook.errors import EnvironmentProblem, InputError
from rigbook.hub.app import create_app
from rigbook.hub.limits import DEFAULT_MAX_BODY
from rigbook.hub.rates import Limits
from rigbook.ports import bind_error

SETTINGS_ENV = "RIGBOOK_HUB_SETTINGS"


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


def worker_app() -> FastAPI:
    """The app of one worker process: settings from RIGBOOK_HUB_SETTINGS; migration and catalog already done."""
    settings = ServeSettings.model_validate_json(os.environ.get(SETTINGS_ENV, "{}"))
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
    os.environ[SETTINGS_ENV] = settings.model_dump_json()
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
