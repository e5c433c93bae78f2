"""The endpoint a bench measures: its base URL checked and normalised, and whether it runs on this machine.

Telemetry and the rig summary describe *this* machine; recorded for a server on another host they
would put this machine's GPUs and power beside someone else's numbers.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import psutil

from rigbook.errors import InputError


def base_url(url: str) -> str:
    """``http(s)://host[:port][/prefix]`` without a trailing slash or ``/v1`` (the bench adds ``/v1/...``)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("E_INPUT", f"{url!r} is not an http(s) URL",
                         "Give the server's base URL, e.g. http://127.0.0.1:8000 (with or without /v1).")
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise InputError("E_INPUT", f"{url!r} has an invalid port", "Write the port as a number, e.g. :8000.") from None
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def _local_addresses() -> set[str]:
    found = {"127.0.0.1", "::1"}
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                found.add(a.address.split("%", 1)[0])
    return found


def is_local(url: str) -> bool:
    """True when the URL's host is this machine: a loopback address, or a name or address of one of its interfaces."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addresses = {info[4][0].split("%", 1)[0] for info in infos}
    mine = _local_addresses()
    return any(ipaddress.ip_address(a).is_loopback or a in mine for a in addresses)
