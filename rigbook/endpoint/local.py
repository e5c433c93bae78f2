"""Whether an endpoint runs on this machine.

Telemetry and the rig summary describe *this* machine; recorded for a server on another host they
would put this machine's GPUs and power beside someone else's numbers.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import psutil


def _local_addresses() -> set[str]:
    found = {"127.0.0.1", "::1"}
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                found.add(a.address.split("%", 1)[0])
    return found


def is_local(url: str) -> bool:
    """True when the URL's host is this machine: a loopback address, or a name or address of one
    of its interfaces."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addresses = {str(info[4][0]).split("%", 1)[0] for info in infos}
    mine = _local_addresses()
    return any(ipaddress.ip_address(a).is_loopback or a in mine for a in addresses)
